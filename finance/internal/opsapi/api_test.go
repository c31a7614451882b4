package opsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/opsapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/problem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	opsToken    = "ops-token-0123456789abcdef"
	clerkToken  = "clerk-token-0123456789abc"
	destination = "http://127.0.0.1:8082/webhooks/finance"
	// current is LOGISTICS_WEBHOOK_URL now; events are written to destination.
	current = "http://127.0.0.1:8092/webhooks/finance"
	reason  = `{"reason":"logistics fixed the mapping"}`
)

// logistics is a scripted logistics ops API: it knows the keys in processed.
type logistics struct {
	processed map[string]string // key -> result
	err       error
}

func (l *logistics) ProcessedEvents(_ context.Context, q logisticsclient.Query) (logisticsclient.Page, error) {
	if l.err != nil {
		return logisticsclient.Page{}, l.err
	}
	page := logisticsclient.Page{Items: []logisticsclient.ProcessedEvent{}}
	for key, result := range l.processed {
		if strings.Contains(key, q.InvoiceID.String()) {
			page.Items = append(page.Items, logisticsclient.ProcessedEvent{IdempotencyKey: key, Result: result,
				ReceivedAt: time.Now()})
		}
	}
	if len(page.Items) > 0 {
		page.Shipment = &logisticsclient.Shipment{InvoiceID: q.InvoiceID, State: "awaiting_payment",
			History: []logisticsclient.Change{{To: "awaiting_payment", Cause: "invoice.issued"}}}
	}
	return page, nil
}

type bundle struct {
	ctx       context.Context
	db        *bun.DB
	invoices  *invoice.Service
	store     *outbox.Store
	breaker   *breaker.Breaker
	logistics *logistics
	e         *echo.Echo
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	invoices, err := invoice.NewService(db, invoice.Config{Destination: destination})
	require.NoError(t, err)
	store, err := outbox.NewStore(invoice.OutboxTable)
	require.NoError(t, err)
	br, err := breaker.New(breaker.Config{Table: "finance_breakers", Threshold: 1})
	require.NoError(t, err)
	lg := &logistics{processed: map[string]string{}}
	svc, err := ops.New(ops.Config{DB: db, Outbox: store, Invoices: invoices, Circuits: br, Logistics: lg, Destination: current})
	require.NoError(t, err)
	tokens, err := auth.ParseTokens("ops:"+opsToken+",clerk:"+clerkToken, "clerk", "ops")
	require.NoError(t, err)
	e := httpserver.New(slog.New(slog.DiscardHandler))
	opsapi.Register(e.Group(""), svc, tokens)
	return &bundle{ctx: context.Background(), db: db, invoices: invoices, store: store, breaker: br, logistics: lg, e: e}
}

// issue issues and pays an invoice: its events are invoice.issued (1) and invoice.paid (2).
func (b *bundle) issue(t *testing.T) invoice.Invoice {
	t.Helper()
	total := int64(12000)
	inv, err := b.invoices.Issue(b.ctx, invoice.NewInvoice{CustomerID: "cust-42", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	paid, err := b.invoices.Pay(b.ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-" + inv.ID.String(), AmountMinor: total})
	require.NoError(t, err)
	return paid.Invoice
}

// deadLetter claims the invoice's head event and settles it as a 400 dead letter.
func (b *bundle) deadLetter(t *testing.T, inv invoice.Invoice) uuid.UUID {
	t.Helper()
	recs, err := b.store.Claim(b.ctx, b.db, "test", 100, time.Minute)
	require.NoError(t, err)
	var rec *outbox.Record
	for i := range recs {
		if recs[i].AggregateKey == inv.ID.String() {
			rec = &recs[i]
		} else {
			require.NoError(t, b.store.Release(b.ctx, b.db, recs[i]))
		}
	}
	require.NotNil(t, rec)
	require.NoError(t, b.store.Settle(b.ctx, b.db, *rec, outbox.Outcome{
		Status: outbox.StatusFailed, Counted: true, Sent: true, StartedAt: time.Now(), Duration: 7 * time.Millisecond,
		StatusCode: 400, Error: "HTTP 400", Snippet: `{"type":"bad"}`, Label: "dead_letter", FailedReason: "rejected: HTTP 400",
	}))
	return rec.ID
}

func (b *bundle) do(t *testing.T, method, path, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
	}
	if body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	return rec
}

func (b *bundle) ok(t *testing.T, method, path, body string, v any) {
	t.Helper()
	rec := b.do(t, method, path, opsToken, body)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), v))
}

func requireProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, slug string) problem.Problem {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	require.Equal(t, problem.ContentType, rec.Header().Get(echo.HeaderContentType))
	var p problem.Problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.Equal(t, problem.TypeBase+slug, p.Type)
	return p
}

type event struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	InvoiceID    string `json:"invoice_id"`
	Sequence     int64  `json:"sequence"`
	Status       string `json:"status"`
	Attempts     int    `json:"attempts"`
	Requests     int    `json:"requests"`
	LastError    string `json:"last_error"`
	FailedReason string `json:"failed_reason"`
	AttemptLog   []struct {
		AttemptNo       int    `json:"attempt_no"`
		StatusCode      int    `json:"status_code"`
		Outcome         string `json:"outcome"`
		DurationMS      int64  `json:"duration_ms"`
		ResponseSnippet string `json:"response_snippet"`
	} `json:"attempt_log"`
	Payload   map[string]any `json:"payload"`
	Logistics *struct {
		Result string `json:"result"`
	} `json:"logistics"`
	Audit []auditEntry `json:"audit"`
}

func TestRoutesNeedAnOpsToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.NewString()
	routes := []struct{ method, path string }{
		{http.MethodGet, "/v1/ops/outbox/stats"},
		{http.MethodGet, "/v1/ops/outbox/events"},
		{http.MethodGet, "/v1/ops/outbox/events/" + id},
		{http.MethodPost, "/v1/ops/outbox/events/" + id + "/retry"},
		{http.MethodPost, "/v1/ops/outbox/events/" + id + "/skip"},
		{http.MethodPost, "/v1/ops/outbox/events/" + id + "/resend"},
		{http.MethodPost, "/v1/ops/outbox/retry"},
		{http.MethodPost, "/v1/ops/outbox/skip"},
		{http.MethodPost, "/v1/ops/outbox/retarget"},
		{http.MethodPost, "/v1/ops/destinations/pause"},
		{http.MethodPost, "/v1/ops/destinations/resume"},
		{http.MethodGet, "/v1/ops/audit"},
		{http.MethodGet, "/v1/ops/invoices/INV-000001/trace"},
	}
	for _, r := range routes {
		requireProblem(t, b.do(t, r.method, r.path, "", ""), http.StatusUnauthorized, "unauthorized")
		requireProblem(t, b.do(t, r.method, r.path, "not-a-token-at-all-0000", ""), http.StatusUnauthorized, "unauthorized")
		requireProblem(t, b.do(t, r.method, r.path, clerkToken, ""), http.StatusForbidden, "forbidden")
	}
}

func TestStatsCountsByStatusWithCircuits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t)
	b.deadLetter(t, inv)
	b.issue(t)
	p, err := b.breaker.Acquire(b.ctx, b.db, destination)
	require.NoError(t, err)
	_, err = b.breaker.Failure(b.ctx, b.db, destination, p)
	require.NoError(t, err)

	var st struct {
		Counts                  map[string]int64 `json:"counts"`
		InFlight                int64            `json:"in_flight"`
		OldestPendingAgeSeconds float64          `json:"oldest_pending_age_seconds"`
		AsOf                    time.Time        `json:"as_of"`
		Circuits                []struct {
			Destination string     `json:"destination"`
			State       string     `json:"state"`
			OpenUntil   *time.Time `json:"open_until"`
		} `json:"circuits"`
		Reconciliation     any    `json:"reconciliation"`
		ReconciliationNote string `json:"reconciliation_note"`
	}
	b.ok(t, http.MethodGet, "/v1/ops/outbox/stats", "", &st)
	require.Equal(t, map[string]int64{"pending": 3, "failed": 1, "delivered": 0, "skipped": 0}, st.Counts)
	require.GreaterOrEqual(t, st.OldestPendingAgeSeconds, 0.0)
	require.False(t, st.AsOf.IsZero())
	require.Len(t, st.Circuits, 1)
	require.Equal(t, "open", st.Circuits[0].State)
	require.NotNil(t, st.Circuits[0].OpenUntil)
	require.Nil(t, st.Reconciliation)
	require.Equal(t, "reconciliation is not configured", st.ReconciliationNote)
}

func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.issue(t)
	failed := b.deadLetter(t, first)
	second := b.issue(t)

	type page struct {
		Items      []event `json:"items"`
		NextCursor string  `json:"next_cursor"`
	}
	var p page
	b.ok(t, http.MethodGet, "/v1/ops/outbox/events?status=failed", "", &p)
	require.Len(t, p.Items, 1)
	require.Equal(t, failed.String(), p.Items[0].ID)
	require.Equal(t, "HTTP 400", p.Items[0].LastError)
	require.Equal(t, "rejected: HTTP 400", p.Items[0].FailedReason)

	for _, ref := range []string{second.Number, strings.TrimPrefix(second.Number, "INV-"), second.ID.String()} {
		b.ok(t, http.MethodGet, "/v1/ops/outbox/events?invoice_id="+ref, "", &p)
		require.Len(t, p.Items, 2, ref)
		require.Equal(t, second.ID.String(), p.Items[0].InvoiceID)
	}
	b.ok(t, http.MethodGet, "/v1/ops/outbox/events?type=invoice.paid&from="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "", &p)
	require.Len(t, p.Items, 2)

	var seen []string
	path := "/v1/ops/outbox/events?limit=3"
	for range 3 {
		p = page{}
		b.ok(t, http.MethodGet, path, "", &p)
		for _, ev := range p.Items {
			seen = append(seen, ev.ID)
		}
		if p.NextCursor == "" {
			break
		}
		path = "/v1/ops/outbox/events?limit=3&cursor=" + p.NextCursor
	}
	require.Len(t, seen, 4)

	for _, q := range []string{"status=lost", "limit=0", "limit=501", "cursor=zzz", "from=yesterday", "invoice_id=INV-x"} {
		requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/outbox/events?"+q, opsToken, ""), http.StatusBadRequest, "validation-failed")
	}
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/outbox/events?invoice_id=INV-999999", opsToken, ""),
		http.StatusNotFound, "invoice-not-found")
}

func TestEventShowsEveryAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t)
	id := b.deadLetter(t, inv)

	var ev event
	b.ok(t, http.MethodGet, "/v1/ops/outbox/events/"+id.String(), "", &ev)
	require.Equal(t, "invoice.issued", ev.Type)
	require.Equal(t, inv.ID.String(), ev.InvoiceID)
	require.Equal(t, "failed", ev.Status)
	require.Len(t, ev.AttemptLog, 1)
	require.Equal(t, 1, ev.AttemptLog[0].AttemptNo)
	require.Equal(t, 400, ev.AttemptLog[0].StatusCode)
	require.Equal(t, "dead_letter", ev.AttemptLog[0].Outcome)
	require.EqualValues(t, 7, ev.AttemptLog[0].DurationMS)
	require.Equal(t, inv.Number, ev.Payload["invoice_number"])

	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/outbox/events/"+uuid.NewString(), opsToken, ""), http.StatusNotFound, "event-not-found")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/outbox/events/4711", opsToken, ""), http.StatusNotFound, "event-not-found")
}

func TestRetryReplaysADeadLetterButNeverADeliveredEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t)
	id := b.deadLetter(t, inv)

	var ev event
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/events/"+id.String()+"/retry", opsToken, ""),
		http.StatusBadRequest, "validation-failed")
	b.ok(t, http.MethodPost, "/v1/ops/outbox/events/"+id.String()+"/retry", reason, &ev)
	require.Equal(t, "pending", ev.Status)
	require.Zero(t, ev.Attempts)
	require.Equal(t, 1, ev.Requests)
	require.Empty(t, ev.FailedReason)

	_, err := b.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'delivered', delivered_at = now() WHERE id = ?`, id).Exec(b.ctx)
	require.NoError(t, err)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/events/"+id.String()+"/retry", opsToken, reason), http.StatusConflict, "event-delivered")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/events/"+uuid.NewString()+"/retry", opsToken, reason), http.StatusNotFound, "event-not-found")
	var d event
	b.ok(t, http.MethodGet, "/v1/ops/outbox/events/"+id.String(), "", &d)
	require.Len(t, d.Audit, 1, "the retry is recorded")
	require.Equal(t, "retry", d.Audit[0].Action)
}

func TestRetryByFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 3 {
		b.deadLetter(t, b.issue(t))
	}
	var res struct {
		Retried int  `json:"retried"`
		More    bool `json:"more"`
	}
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed","type":"invoice.issued","limit":2,"reason":"outage over"}`, &res)
	require.Equal(t, 2, res.Retried)
	require.True(t, res.More)
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retry", `{"reason":"outage over"}`, &res)
	require.Equal(t, 1, res.Retried)
	require.False(t, res.More)
	var failed int
	require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`).Scan(b.ctx, &failed))
	require.Zero(t, failed)

	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, `{"status":"delivered","reason":"x"}`), http.StatusBadRequest, "validation-failed")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, `{"statuss":"failed"}`), http.StatusBadRequest, "malformed-json")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, `{"limit":100000,"reason":"x"}`), http.StatusBadRequest, "validation-failed")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, `{"invoice_id":"INV-424242","reason":"x"}`), http.StatusNotFound, "invoice-not-found")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, ``), http.StatusBadRequest, "validation-failed")
}

func TestTraceAnswersWhatHappenedToAnInvoice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t)
	id := b.deadLetter(t, inv)
	b.logistics.processed["invoice.issued:"+inv.ID.String()] = "applied"

	type trace struct {
		Invoice struct {
			ID     string `json:"id"`
			Number string `json:"number"`
			Status string `json:"status"`
		} `json:"invoice"`
		Events    []event `json:"events"`
		Logistics struct {
			Available bool   `json:"available"`
			Note      string `json:"note"`
			Processed []struct {
				IdempotencyKey string `json:"idempotency_key"`
			} `json:"processed"`
			Shipment *struct {
				State string `json:"state"`
			} `json:"shipment"`
		} `json:"logistics"`
	}
	var tr trace
	b.ok(t, http.MethodGet, "/v1/ops/invoices/"+inv.Number+"/trace", "", &tr)
	require.Equal(t, inv.ID.String(), tr.Invoice.ID)
	require.Equal(t, "paid", tr.Invoice.Status)
	require.Len(t, tr.Events, 2)
	require.Equal(t, id.String(), tr.Events[0].ID)
	require.Len(t, tr.Events[0].AttemptLog, 1)
	require.Equal(t, "applied", tr.Events[0].Logistics.Result)
	require.Nil(t, tr.Events[1].Logistics)
	require.True(t, tr.Logistics.Available)
	require.Len(t, tr.Logistics.Processed, 1)
	require.Equal(t, "awaiting_payment", tr.Logistics.Shipment.State)

	b.logistics.err = fmt.Errorf("logisticsclient: %w", errors.New("connection refused"))
	b.ok(t, http.MethodGet, "/v1/ops/invoices/"+inv.ID.String()+"/trace", "", &tr)
	require.False(t, tr.Logistics.Available)
	require.Contains(t, tr.Logistics.Note, "logistics record unavailable")
	require.Len(t, tr.Events, 2, "finance's side is shown all the same")

	b.logistics.err = logisticsclient.ErrNotConfigured
	b.ok(t, http.MethodGet, "/v1/ops/invoices/"+strings.TrimPrefix(inv.Number, "INV-")+"/trace", "", &tr)
	require.Contains(t, tr.Logistics.Note, "LOGISTICS_OPS_TOKEN")

	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/invoices/INV-777777/trace", opsToken, ""), http.StatusNotFound, "invoice-not-found")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/invoices/banana/trace", opsToken, ""), http.StatusBadRequest, "validation-failed")
}
