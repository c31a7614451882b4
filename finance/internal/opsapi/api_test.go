package opsapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/finance/internal/logisticsclient"
)

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

// retried is the answer to a retry by filter.
type retried struct {
	Retried int  `json:"retried"`
	More    bool `json:"more"`
	DryRun  bool `json:"dry_run"`
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
	p, err := b.breaker.Acquire(b.Ctx, b.DB, destination)
	require.NoError(t, err)
	_, err = b.breaker.Failure(b.Ctx, b.DB, destination, p)
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

	b.markDelivered(t, id)
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
	b.deadLetters(t, 3)
	var res retried
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed","type":"invoice.issued","limit":2,"reason":"outage over"}`, &res)
	require.Equal(t, 2, res.Retried)
	require.True(t, res.More)
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retry", `{"reason":"outage over"}`, &res)
	require.Equal(t, 1, res.Retried)
	require.False(t, res.More)
	require.Zero(t, b.failedCount(t))

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
