package opsapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
)

type auditEntry struct {
	ID          int64          `json:"id"`
	At          time.Time      `json:"at"`
	Actor       string         `json:"actor"`
	Action      string         `json:"action"`
	Reason      string         `json:"reason"`
	EventID     *string        `json:"event_id"`
	InvoiceID   *string        `json:"invoice_id"`
	Count       int            `json:"count"`
	Filter      map[string]any `json:"filter"`
	Destination string         `json:"destination"`
}

type auditPage struct {
	Items      []auditEntry `json:"items"`
	NextCursor string       `json:"next_cursor"`
}

// claim claims every due event and releases it again.
func (b *bundle) claim(t *testing.T) []outbox.Record {
	t.Helper()
	recs, err := b.Outbox.Claim(b.Ctx, b.DB, "test", 100, time.Minute)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, b.Outbox.Release(b.Ctx, b.DB, r))
	}
	return recs
}

// A dead letter skipped with a reason: refused without one, recorded with the token's
// principal, shown in the event's detail, the audit log and the trace; a skip is final.
func TestSkipNeedsAReasonAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t)
	id := b.deadLetter(t, inv)
	path := "/v1/ops/outbox/events/" + id.String() + "/skip"
	for _, body := range []string{"", `{}`, `{"reason":"   "}`, `{"reason":"` + strings.Repeat("x", 1001) + `"}`} {
		p := requireProblem(t, b.do(t, http.MethodPost, path, opsToken, body), http.StatusBadRequest, "validation-failed")
		require.Equal(t, "reason", p.Errors[0].Field, body)
	}
	requireProblem(t, b.do(t, http.MethodPost, path, opsToken, `{"reason":"x","why":"y"}`), http.StatusBadRequest, "malformed-json")

	var ev event
	b.ok(t, http.MethodPost, path, `{"reason":"INC-7: the issued event is malformed upstream"}`, &ev)
	require.Equal(t, "skipped", ev.Status)
	requireProblem(t, b.do(t, http.MethodPost, path, opsToken, reason), http.StatusConflict, "event-not-dead-letter")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/events/"+id.String()+"/retry", opsToken, reason),
		http.StatusConflict, "event-skipped")

	var d event
	b.ok(t, http.MethodGet, "/v1/ops/outbox/events/"+id.String(), "", &d)
	require.Len(t, d.Audit, 1)
	e := d.Audit[0]
	require.Equal(t, "skip", e.Action)
	require.True(t, strings.HasPrefix(e.Actor, "ops:"), e.Actor)
	require.Equal(t, "INC-7: the issued event is malformed upstream", e.Reason)
	require.Equal(t, 1, e.Count)
	require.Equal(t, id.String(), *e.EventID)
	require.Equal(t, inv.ID.String(), *e.InvoiceID)

	for _, q := range []string{"event_id=" + id.String(), "invoice_id=" + inv.Number, "invoice_id=" + inv.ID.String(), ""} {
		var page auditPage
		b.ok(t, http.MethodGet, "/v1/ops/audit?"+q, "", &page)
		require.Equal(t, []auditEntry{e}, page.Items, q)
	}
	var tr struct {
		Events []event `json:"events"`
	}
	b.ok(t, http.MethodGet, "/v1/ops/invoices/"+inv.Number+"/trace", "", &tr)
	require.Equal(t, []auditEntry{e}, tr.Events[0].Audit)
	require.Empty(t, tr.Events[1].Audit)

	recs := b.claim(t)
	require.Len(t, recs, 1, "invoice.paid goes on")
	require.Equal(t, "invoice.paid", recs[0].EventType)
}

// Resend takes a delivered event only; the event is due again under its key.
func TestResendTakesADeliveredEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.deadLetter(t, b.issue(t))
	path := "/v1/ops/outbox/events/" + id.String() + "/resend"
	requireProblem(t, b.do(t, http.MethodPost, path, opsToken, reason), http.StatusConflict, "event-not-delivered")
	b.markDelivered(t, id)
	var ev event
	b.ok(t, http.MethodPost, path, `{"reason":"logistics restored an old backup"}`, &ev)
	require.Equal(t, "pending", ev.Status)
	require.Equal(t, 1, ev.Requests)
	var page auditPage
	b.ok(t, http.MethodGet, "/v1/ops/audit?event_id="+id.String(), "", &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, "resend", page.Items[0].Action)
}

// Retry and skip by filter: a dry run answers the count and changes and records
// nothing; the real one changes and records, with its filter.
func TestActionsByFilterWithADryRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadLetters(t, 3)
	var res retried
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed","limit":2,"dry_run":true,"reason":"see what goes"}`, &res)
	require.Equal(t, 2, res.Retried)
	require.True(t, res.More)
	require.True(t, res.DryRun)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retry", opsToken, `{"dry_run":true}`),
		http.StatusBadRequest, "validation-failed")
	var skipped struct {
		Skipped int  `json:"skipped"`
		More    bool `json:"more"`
		DryRun  bool `json:"dry_run"`
	}
	b.ok(t, http.MethodPost, "/v1/ops/outbox/skip", `{"dry_run":true,"reason":"see what goes"}`, &skipped)
	require.Equal(t, 3, skipped.Skipped)
	require.True(t, skipped.DryRun)
	var page auditPage
	b.ok(t, http.MethodGet, "/v1/ops/audit", "", &page)
	require.Empty(t, page.Items, "a dry run records nothing")
	require.Equal(t, 3, b.failedCount(t), "a dry run changes nothing")

	skipped.DryRun = false
	b.ok(t, http.MethodPost, "/v1/ops/outbox/skip", `{"type":"invoice.issued","limit":2,"reason":"INC-9"}`, &skipped)
	require.Equal(t, 2, skipped.Skipped)
	require.True(t, skipped.More)
	require.False(t, skipped.DryRun)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/skip", opsToken, `{"status":"pending","reason":"x"}`),
		http.StatusBadRequest, "validation-failed")
	b.ok(t, http.MethodGet, "/v1/ops/audit", "", &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, "skip", page.Items[0].Action)
	require.Equal(t, 2, page.Items[0].Count)
	require.Nil(t, page.Items[0].EventID)
	require.Equal(t, map[string]any{"status": "failed", "type": "invoice.issued", "limit": 2.0}, page.Items[0].Filter)
}

// Retarget moves the old destination's undelivered events to the current one.
func TestRetargetToTheCurrentDestination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadLetter(t, b.issue(t))
	b.issue(t)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retarget", opsToken, `{"from":"`+destination+`"}`),
		http.StatusBadRequest, "validation-failed")
	p := requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/outbox/retarget", opsToken, `{"from":"`+current+`","reason":"x"}`),
		http.StatusBadRequest, "validation-failed")
	require.Equal(t, "from", p.Errors[0].Field)
	var res struct {
		Retargeted int `json:"retargeted"`
	}
	b.ok(t, http.MethodPost, "/v1/ops/outbox/retarget", `{"from":"`+destination+`","reason":"logistics moved"}`, &res)
	require.Equal(t, 4, res.Retargeted)
	var moved int
	require.NoError(t, b.DB.NewRaw(`SELECT count(*) FROM finance_outbox WHERE destination = ?`, current).Scan(b.Ctx, &moved))
	require.Equal(t, 4, moved)
	var page auditPage
	b.ok(t, http.MethodGet, "/v1/ops/audit", "", &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, "retarget", page.Items[0].Action)
	require.Equal(t, current, page.Items[0].Destination)
	require.Equal(t, map[string]any{"destination": destination}, page.Items[0].Filter)
}

// Pause and resume a destination: refused twice, shown on the circuits, audited, and
// the audit log pages newest first.
func TestPauseAndResumeADestination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"destination":"` + destination + `","reason":"logistics asked for quiet"}`
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/destinations/resume", opsToken, body), http.StatusConflict, "destination-not-paused")
	var res struct {
		Destination string `json:"destination"`
		Paused      bool   `json:"paused"`
		Hastened    *int   `json:"hastened"`
	}
	b.ok(t, http.MethodPost, "/v1/ops/destinations/pause", body, &res)
	require.Equal(t, destination, res.Destination)
	require.True(t, res.Paused)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/destinations/pause", opsToken, body), http.StatusConflict, "destination-paused")
	p := requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/destinations/pause", opsToken, `{"reason":"x"}`),
		http.StatusBadRequest, "validation-failed")
	require.Equal(t, "destination", p.Errors[0].Field)
	permit, err := b.breaker.Acquire(b.Ctx, b.DB, destination)
	require.NoError(t, err)
	require.True(t, permit.Paused)

	var st struct {
		Circuits []struct {
			Destination string     `json:"destination"`
			PausedAt    *time.Time `json:"paused_at"`
		} `json:"circuits"`
	}
	b.ok(t, http.MethodGet, "/v1/ops/outbox/stats", "", &st)
	require.Len(t, st.Circuits, 1)
	require.NotNil(t, st.Circuits[0].PausedAt)

	b.ok(t, http.MethodPost, "/v1/ops/destinations/resume", body, &res)
	require.False(t, res.Paused)
	require.Equal(t, 0, *res.Hastened)

	var page auditPage
	b.ok(t, http.MethodGet, "/v1/ops/audit?limit=1", "", &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, "resume", page.Items[0].Action)
	require.NotEmpty(t, page.NextCursor)
	next := page.NextCursor
	page = auditPage{}
	b.ok(t, http.MethodGet, "/v1/ops/audit?limit=1&cursor="+next, "", &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, "pause", page.Items[0].Action)
	require.Equal(t, destination, page.Items[0].Destination)
	require.Empty(t, page.NextCursor)

	for _, q := range []string{"limit=0", "limit=501", "cursor=zzz", "event_id=42", "invoice_id=INV-x"} {
		requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/audit?"+q, opsToken, ""), http.StatusBadRequest, "validation-failed")
	}
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/audit?invoice_id=INV-999999", opsToken, ""), http.StatusNotFound, "invoice-not-found")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/audit?action=pause", opsToken, ""), http.StatusBadRequest, "unknown-parameter")
}
