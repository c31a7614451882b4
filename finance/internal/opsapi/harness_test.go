package opsapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/opsapi"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/problem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	opsToken    = "ops-token-0123456789abcdef"
	clerkToken  = "clerk-token-0123456789abc"
	destination = financetest.Destination
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
	*financetest.Domain
	breaker   *breaker.Breaker
	logistics *logistics
	e         *echo.Echo
}

func setup(t *testing.T) *bundle {
	t.Helper()
	d := financetest.New(t)
	br := financetest.NewBreaker(t, breaker.Config{Threshold: 1})
	lg := &logistics{processed: map[string]string{}}
	svc := d.Ops(t, ops.Config{Circuits: br, Logistics: lg, Destination: current})
	tokens, err := auth.ParseTokens("ops:"+opsToken+",clerk:"+clerkToken, "clerk", "ops")
	require.NoError(t, err)
	e := financetest.Echo()
	opsapi.Register(e.Group(""), svc, tokens)
	return &bundle{Domain: d, breaker: br, logistics: lg, e: e}
}

// issue issues and pays an invoice: its events are invoice.issued (1) and invoice.paid (2).
func (b *bundle) issue(t *testing.T) invoice.Invoice {
	t.Helper()
	total := int64(12000)
	inv, err := b.Invoices.Issue(b.Ctx, invoice.NewInvoice{CustomerID: "cust-42", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	paid, err := b.Invoices.Pay(b.Ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-" + inv.ID.String(), AmountMinor: total})
	require.NoError(t, err)
	return paid.Invoice
}

// deadLetter claims the invoice's head event and settles it as a 400 dead letter.
func (b *bundle) deadLetter(t *testing.T, inv invoice.Invoice) uuid.UUID {
	t.Helper()
	recs, err := b.Outbox.Claim(b.Ctx, b.DB, "test", 100, time.Minute)
	require.NoError(t, err)
	var rec *outbox.Record
	for i := range recs {
		if recs[i].AggregateKey == inv.ID.String() {
			rec = &recs[i]
		} else {
			require.NoError(t, b.Outbox.Release(b.Ctx, b.DB, recs[i]))
		}
	}
	require.NotNil(t, rec)
	require.NoError(t, b.Outbox.Settle(b.Ctx, b.DB, *rec, outbox.Outcome{
		Status: outbox.StatusFailed, Counted: true, Sent: true, StartedAt: time.Now(), Duration: 7 * time.Millisecond,
		StatusCode: 400, Error: "HTTP 400", Snippet: `{"type":"bad"}`, Label: "dead_letter", FailedReason: "rejected: HTTP 400",
	}))
	return rec.ID
}

// deadLetters issues and pays n invoices and dead-letters the head event of each.
func (b *bundle) deadLetters(t *testing.T, n int) {
	t.Helper()
	for range n {
		b.deadLetter(t, b.issue(t))
	}
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

// markDelivered records the event as delivered, as a dispatcher would.
func (b *bundle) markDelivered(t *testing.T, id uuid.UUID) {
	t.Helper()
	_, err := b.DB.NewRaw(`UPDATE finance_outbox SET delivery_status = 'delivered', delivered_at = now() WHERE id = ?`, id).Exec(b.Ctx)
	require.NoError(t, err)
}

// failedCount is how many events are dead letters.
func (b *bundle) failedCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.DB.NewRaw(`SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`).Scan(b.Ctx, &n))
	return n
}
