package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// Events are written to oldDest; the service's current destination is newDest.
const (
	oldDest = financetest.Destination
	newDest = "http://127.0.0.1:8092/webhooks/finance"
)

var by = ops.Action{Actor: "ops:test", Reason: "logistics refuses it for good"}

type actions struct {
	ctx      context.Context
	db       *bun.DB
	store    *outbox.Store
	br       *breaker.Breaker
	invoices *invoice.Service
	svc      *ops.Service
}

func setupActions(t *testing.T) *actions {
	t.Helper()
	d := financetest.New(t)
	br := financetest.NewBreaker(t, breaker.Config{})
	return &actions{ctx: d.Ctx, db: d.DB, store: d.Outbox, br: br, invoices: d.Invoices,
		svc: d.Ops(t, ops.Config{Circuits: br, Destination: newDest})}
}

// paid issues and pays an invoice: its events are invoice.issued (1) and invoice.paid (2).
func (a *actions) paid(t *testing.T) invoice.Invoice {
	t.Helper()
	total := int64(500)
	inv, err := a.invoices.Issue(a.ctx, invoice.NewInvoice{CustomerID: "cust-ops", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	_, err = a.invoices.Pay(a.ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-" + inv.ID.String(), AmountMinor: total})
	require.NoError(t, err)
	return inv
}

// claim claims every due event and releases them, returning them by id.
func (a *actions) claim(t *testing.T) map[uuid.UUID]outbox.Record {
	t.Helper()
	recs, err := a.store.Claim(a.ctx, a.db, "test", 100, time.Minute)
	require.NoError(t, err)
	out := map[uuid.UUID]outbox.Record{}
	for _, r := range recs {
		out[r.ID] = r
		require.NoError(t, a.store.Release(a.ctx, a.db, r))
	}
	return out
}

// settle claims the head of inv and settles it with status, releasing the others.
func (a *actions) settle(t *testing.T, inv invoice.Invoice, status string) uuid.UUID {
	t.Helper()
	recs, err := a.store.Claim(a.ctx, a.db, "test", 100, time.Minute)
	require.NoError(t, err)
	var head uuid.UUID
	for _, r := range recs {
		if r.AggregateKey != inv.ID.String() {
			require.NoError(t, a.store.Release(a.ctx, a.db, r))
			continue
		}
		out := outbox.Outcome{Status: status, Counted: true, Sent: true, StartedAt: time.Now(), StatusCode: 200, Label: "delivered"}
		if status == outbox.StatusFailed {
			out.StatusCode, out.Error, out.Label, out.FailedReason = 422, "HTTP 422", "dead_letter", "rejected_by_receiver"
		}
		require.NoError(t, a.store.Settle(a.ctx, a.db, r, out))
		head = r.ID
	}
	require.NotEqual(t, uuid.Nil, head, "no due event of invoice %s", inv.ID)
	return head
}

func (a *actions) status(t *testing.T, id uuid.UUID) outbox.StoredEvent {
	t.Helper()
	d, err := a.svc.Event(a.ctx, id)
	require.NoError(t, err)
	return d.StoredEvent
}

func (a *actions) entries(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, a.db.NewRaw(`SELECT count(*) FROM finance_operator_actions`).Scan(a.ctx, &n))
	return n
}

// A skipped dead head lets its invoice's next event be claimed, and the skip is in
// the audit log: by event, by invoice, and in the invoice's trace.
func TestSkipLetsTheInvoiceGoOnAndIsRecorded(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	inv := a.paid(t)
	head := a.settle(t, inv, outbox.StatusFailed)
	require.Empty(t, a.claim(t), "invoice.paid waits behind its dead head")

	ev, err := a.svc.Skip(a.ctx, head, ops.Action{Actor: by.Actor, Reason: "  " + by.Reason + "\n"})
	require.NoError(t, err)
	require.Equal(t, outbox.StatusSkipped, ev.Status)
	due := a.claim(t)
	require.Len(t, due, 1)
	for _, rec := range due {
		require.Equal(t, "invoice.paid", rec.EventType)
		require.Equal(t, inv.ID.String(), rec.AggregateKey)
	}

	entries, err := a.svc.EventActions(a.ctx, head)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	require.Equal(t, audit.Skip, e.Action)
	require.Equal(t, by.Actor, e.Actor)
	require.Equal(t, by.Reason, e.Reason, "trimmed")
	require.Equal(t, 1, e.Count)
	require.Equal(t, head, *e.EventID)
	require.Equal(t, inv.ID, *e.InvoiceID)
	require.WithinDuration(t, time.Now(), e.At, time.Minute)

	for _, q := range []audit.Query{{EventID: &head}, {InvoiceID: &inv.ID}, {}} {
		page, err := a.svc.Audit(a.ctx, q)
		require.NoError(t, err)
		require.Equal(t, entries, page.Items)
	}
	other := uuid.New()
	page, err := a.svc.Audit(a.ctx, audit.Query{InvoiceID: &other})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	tr, err := a.svc.Trace(a.ctx, inv.Number)
	require.NoError(t, err)
	require.Equal(t, entries, tr.Actions[head])
}

// No reason, a blank one or one too long is refused before anything changes.
func TestActionsNeedAReason(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	head := a.settle(t, a.paid(t), outbox.StatusFailed)
	for _, reason := range []string{"", " \t\n ", strings.Repeat("é", ops.MaxReasonLength+1)} {
		act := ops.Action{Actor: by.Actor, Reason: reason}
		_, err := a.svc.Skip(a.ctx, head, act)
		requireInvalid(t, err, "reason")
		_, err = a.svc.RetryEvent(a.ctx, head, act)
		requireInvalid(t, err, "reason")
		_, err = a.svc.RetryMatching(a.ctx, ops.Matching{DryRun: true}, act)
		requireInvalid(t, err, "reason")
		_, err = a.svc.Retarget(a.ctx, oldDest, act)
		requireInvalid(t, err, "reason")
		requireInvalid(t, a.svc.Pause(a.ctx, newDest, act), "reason")
	}
	requireInvalid(t, a.svc.Pause(a.ctx, " ", by), "destination")
	_, err := a.svc.Skip(a.ctx, head, ops.Action{Reason: by.Reason})
	require.Error(t, err, "an action needs an actor")
	require.Equal(t, outbox.StatusFailed, a.status(t, head).Status)
	require.Zero(t, a.entries(t))
}

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var invalid *ops.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, field, invalid.Field)
}

// The audit entry and the change commit together: when the entry cannot be written,
// no action changes anything; when the change is refused, nothing is recorded.
func TestAuditEntryCommitsWithItsChange(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	dead := a.settle(t, a.paid(t), outbox.StatusFailed)
	delivered := a.settle(t, a.paid(t), outbox.StatusDelivered)
	_, err := a.db.ExecContext(a.ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'audit log unavailable'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON finance_operator_actions FOR EACH ROW EXECUTE FUNCTION refuse();`)
	require.NoError(t, err)

	actions := map[string]func() error{
		"retry":  func() error { _, err := a.svc.RetryEvent(a.ctx, dead, by); return err },
		"skip":   func() error { _, err := a.svc.Skip(a.ctx, dead, by); return err },
		"resend": func() error { _, err := a.svc.Resend(a.ctx, delivered, by); return err },
		"retry by filter": func() error {
			_, err := a.svc.RetryMatching(a.ctx, ops.Matching{}, by)
			return err
		},
		"skip by filter": func() error {
			_, err := a.svc.SkipMatching(a.ctx, ops.Matching{}, by)
			return err
		},
		"retarget": func() error { _, err := a.svc.Retarget(a.ctx, oldDest, by); return err },
		"pause":    func() error { return a.svc.Pause(a.ctx, newDest, by) },
	}
	for name, act := range actions {
		require.ErrorContains(t, act(), "audit log unavailable", name)
	}
	require.Equal(t, outbox.StatusFailed, a.status(t, dead).Status)
	require.Equal(t, oldDest, a.status(t, dead).Destination)
	require.Equal(t, outbox.StatusDelivered, a.status(t, delivered).Status)
	paused, err := a.br.Paused(a.ctx, a.db, newDest)
	require.NoError(t, err)
	require.False(t, paused)

	_, err = a.db.ExecContext(a.ctx, `DROP TRIGGER refuse ON finance_operator_actions`)
	require.NoError(t, err)
	_, err = a.svc.Skip(a.ctx, delivered, by)
	require.ErrorIs(t, err, outbox.ErrNotDeadLetter)
	_, err = a.svc.Resend(a.ctx, dead, by)
	require.ErrorIs(t, err, outbox.ErrNotDelivered)
	_, err = a.svc.Resume(a.ctx, newDest, by)
	require.ErrorIs(t, err, ops.ErrNotPaused)
	require.Zero(t, a.entries(t), "a refused action is not recorded")
}

// A dry run answers what the action would do and changes and records nothing; the
// action by filter then records its filter and every event it changed.
func TestDryRunChangesNothingAndTheActionRecordsItsEvents(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	var dead []uuid.UUID
	for range 3 {
		dead = append(dead, a.settle(t, a.paid(t), outbox.StatusFailed))
	}
	f := outbox.Filter{Type: invoice.EventIssued, Limit: 2}
	for _, do := range []func(context.Context, ops.Matching, ops.Action) (outbox.BulkResult, error){
		a.svc.RetryMatching, a.svc.SkipMatching,
	} {
		res, err := do(a.ctx, ops.Matching{Filter: f, DryRun: true}, by)
		require.NoError(t, err)
		require.Equal(t, outbox.BulkResult{Count: 2, More: true}, res)
	}
	for _, id := range dead {
		require.Equal(t, outbox.StatusFailed, a.status(t, id).Status)
	}
	require.Zero(t, a.entries(t))

	res, err := a.svc.SkipMatching(a.ctx, ops.Matching{Filter: f}, by)
	require.NoError(t, err)
	require.Equal(t, 2, res.Count)
	require.True(t, res.More)
	page, err := a.svc.Audit(a.ctx, audit.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	e := page.Items[0]
	require.Equal(t, audit.Skip, e.Action)
	require.Equal(t, 2, e.Count)
	require.Nil(t, e.EventID)
	require.Equal(t, &audit.Filter{Status: outbox.StatusFailed, Type: invoice.EventIssued, Limit: 2}, e.Filter)
	for _, ref := range res.Changed {
		entries, err := a.svc.EventActions(a.ctx, ref.ID)
		require.NoError(t, err)
		require.Equal(t, []audit.Entry{e}, entries)
	}
}

// A delivered event resent goes out again under its key, recorded.
func TestResendIsRecordedAndClaimedAgain(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	inv := a.paid(t)
	id := a.settle(t, inv, outbox.StatusDelivered)
	ev, err := a.svc.Resend(a.ctx, id, by)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusPending, ev.Status)
	due := a.claim(t)
	require.Contains(t, due, id)
	require.Equal(t, "invoice.issued:"+inv.ID.String(), due[id].IdempotencyKey)
	entries, err := a.svc.EventActions(a.ctx, id)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, audit.Resend, entries[0].Action)
}

// Retarget moves every undelivered event of the old destination to the current one.
func TestRetargetMovesToTheCurrentDestination(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	dead := a.settle(t, a.paid(t), outbox.StatusFailed)
	a.paid(t)
	n, err := a.svc.Retarget(a.ctx, oldDest, by)
	require.NoError(t, err)
	require.Equal(t, 4, n, "a dead letter and three pending events")
	require.Equal(t, newDest, a.status(t, dead).Destination)
	require.Equal(t, outbox.StatusPending, a.status(t, dead).Status, "the dead letter goes again, to the new destination")

	page, err := a.svc.Audit(a.ctx, audit.Query{EventID: &dead})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, audit.Retarget, page.Items[0].Action)
	require.Equal(t, 4, page.Items[0].Count)
	require.Equal(t, newDest, page.Items[0].Destination)
	require.Equal(t, oldDest, page.Items[0].Filter.Destination)

	_, err = a.svc.Retarget(a.ctx, newDest, by)
	var fe *outbox.FilterError
	require.ErrorAs(t, err, &fe)
	noDest, err := ops.New(ops.Config{DB: a.db, Outbox: a.store, Invoices: a.invoices, Circuits: a.br})
	require.NoError(t, err)
	_, err = noDest.Retarget(a.ctx, oldDest, by)
	require.Error(t, err)
}

// A paused destination is refused to every dispatcher's permit; its resume makes the
// events its pause deferred due at once. Both are in the audit log, newest first, a
// page at a time.
func TestPauseIsHonouredAndResumeHastens(t *testing.T) {
	t.Parallel()
	a := setupActions(t)
	require.NoError(t, a.svc.Pause(a.ctx, oldDest, by))
	require.ErrorIs(t, a.svc.Pause(a.ctx, oldDest, by), ops.ErrPaused)
	p, err := a.br.Acquire(a.ctx, a.db, oldDest)
	require.NoError(t, err)
	require.True(t, p.Paused)
	require.False(t, p.Allowed)
	ov, err := a.svc.Overview(a.ctx)
	require.NoError(t, err)
	require.Len(t, ov.Circuits, 1)
	require.NotNil(t, ov.Circuits[0].PausedAt)

	a.paid(t)
	_, err = a.db.NewRaw(`UPDATE finance_outbox SET deferred_by = ?, deferred_at = now(),
		next_attempt_at = now() + interval '1 hour' WHERE aggregate_seq = 1`, outbox.DeferredByPause).Exec(a.ctx)
	require.NoError(t, err)
	require.Empty(t, a.claim(t))
	n, err := a.svc.Resume(a.ctx, oldDest, ops.Action{Actor: "cli:alice", Reason: "logistics is back"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, a.claim(t), 1, "due at once")

	page, err := a.svc.Audit(a.ctx, audit.Query{Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, audit.Resume, page.Items[0].Action)
	require.Equal(t, "cli:alice", page.Items[0].Actor)
	require.Equal(t, 1, page.Items[0].Count)
	require.NotNil(t, page.Next)
	cursor, err := audit.ParseCursor(page.Next.String())
	require.NoError(t, err)
	page, err = a.svc.Audit(a.ctx, audit.Query{Limit: 1, After: &cursor})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, audit.Pause, page.Items[0].Action)
	require.Equal(t, oldDest, page.Items[0].Destination)
	require.Zero(t, page.Items[0].Count)
	require.Nil(t, page.Next)

	_, err = a.svc.Audit(a.ctx, audit.Query{Limit: audit.MaxLimit + 1})
	requireInvalid(t, err, "limit")
	for _, s := range []string{"", "!!", "YTE6MA", "YjE6NQ"} {
		_, err := audit.ParseCursor(s)
		require.ErrorIs(t, err, audit.ErrBadCursor, s)
	}
}
