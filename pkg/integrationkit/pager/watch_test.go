package pager_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/pager"
)

// debts is an outbox, a circuit table and an alert table in one fresh database.
type debts struct {
	db      *bun.DB
	store   *outbox.Store
	breaker *breaker.Breaker
}

func setupDebts(t *testing.T) debts {
	t.Helper()
	ctx := context.Background()
	db, _, store := outboxtest.Setup(t)
	_, err := db.ExecContext(ctx, schema+breaker.Schema("circuits"))
	require.NoError(t, err)
	br, err := breaker.New(breaker.Config{Table: "circuits", Threshold: 1, Cooldown: time.Millisecond})
	require.NoError(t, err)
	return debts{db: db, store: store, breaker: br}
}

// settle enqueues an event for aggregate, claims it and settles it with out, as a
// dispatcher would; it returns the event's id.
func (d debts) settle(t *testing.T, aggregate string, out outbox.Outcome) string {
	t.Helper()
	ctx := context.Background()
	id, err := d.store.Enqueue(ctx, d.db, outbox.Event{Type: "t", AggregateKey: aggregate, Sequence: 1,
		IdempotencyKey: "k-" + aggregate, Destination: "http://dest", Payload: 1})
	require.NoError(t, err)
	recs, err := d.store.Claim(ctx, d.db, "replica", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	out.Sent, out.StartedAt = true, time.Now()
	require.NoError(t, d.store.Settle(ctx, d.db, recs[0], out))
	return id.String()
}

// open opens and, when closeToo, closes dest's circuit, as dispatchers would.
func (d debts) open(t *testing.T, dest string, closeToo bool) {
	t.Helper()
	ctx := context.Background()
	p, err := d.breaker.Acquire(ctx, d.db, dest)
	require.NoError(t, err)
	tr, err := d.breaker.Failure(ctx, d.db, dest, p)
	require.NoError(t, err)
	require.Equal(t, breaker.Opened, tr)
	if !closeToo {
		return
	}
	require.Eventually(t, func() bool {
		p, err = d.breaker.Acquire(ctx, d.db, dest)
		require.NoError(t, err)
		return p.Probe
	}, 5*time.Second, time.Millisecond)
	tr, err = d.breaker.Success(ctx, d.db, dest, p)
	require.NoError(t, err)
	require.Equal(t, breaker.Recovered, tr)
}

// The dispatcher's dead letters, 401/403 answers and circuit changes, and an old
// pending event, each page under their own key.
func TestWhatThePagerWatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := setupDebts(t)
	dead := d.settle(t, "order-9", outbox.Outcome{Status: outbox.StatusFailed, FailedReason: "rejected_by_receiver",
		Error: "HTTP 422", Snippet: `{"type":"invalid-event"}`, StatusCode: 422, Page: delivery.PageDeadLetter})
	d.settle(t, "order-8", outbox.Outcome{Status: outbox.StatusPending, StatusCode: 401, Error: "HTTP 401",
		Counted: true, RetryIn: time.Hour, Page: delivery.PageUnauthorized})
	d.settle(t, "order-7", outbox.Outcome{Status: outbox.StatusDelivered, StatusCode: 200})
	d.open(t, "http://dest", false)

	slack := newSlack(t, 0, false)
	p := start(t, d.db, slack, pager.Config{AggregateLabel: "order", Gather: time.Millisecond, Poll: 20 * time.Millisecond},
		pager.DeliveryDebts(d.store, d.breaker))
	id, err := d.store.Enqueue(ctx, d.db, outbox.Event{Type: "t", AggregateKey: "order-1", Sequence: 1,
		IdempotencyKey: "k", Destination: "http://dest", Payload: 1})
	require.NoError(t, err)
	require.NoError(t, p.CheckPending(ctx, d.db, d.store, time.Minute), "a young event pages nothing")
	_, err = d.db.NewRaw(`UPDATE kit_outbox SET created_at = now() - interval '10 minutes' WHERE id = ?`, id).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, p.CheckPending(ctx, d.db, d.store, 5*time.Minute))

	want := []string{
		"events dead-lettered — 1 in the last",
		"deliveries refused with HTTP 401/403",
		"circuit opened: deliveries paused",
		"oldest pending event older than 5m0s — 1 in the last",
	}
	require.Eventually(t, func() bool { return len(slack.messages()) == len(want) }, 10*time.Second, 10*time.Millisecond)
	all := strings.Join(slack.messages(), "\n---\n")
	for _, w := range want {
		require.Contains(t, all, w)
	}
	require.Contains(t, all, "e.g. event "+dead+", order order-9, last error: rejected_by_receiver: HTTP 422 — {\"type\":\"invalid-event\"}")
	require.Contains(t, all, "e.g. event "+id.String()+", order order-1")
}

// Pages owed by settled outcomes and circuit transitions survive the replica that
// wrote them: nothing was running when they were settled, and two pagers started
// afterwards page each exactly once (a circuit that opened and closed unannounced
// pages both).
func TestOwedPagesSurviveTheirReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := setupDebts(t)
	const dead = 30
	for i := range dead {
		d.settle(t, fmt.Sprintf("order-%d", i), outbox.Outcome{Status: outbox.StatusFailed,
			FailedReason: "rejected_by_receiver", Error: "HTTP 400", StatusCode: 400, Page: delivery.PageDeadLetter})
	}
	d.open(t, "http://flappy", true)

	slack := newSlack(t, 0, false)
	cfg := pager.Config{Gather: 300 * time.Millisecond, Poll: 20 * time.Millisecond, Repeat: time.Hour}
	for range 2 {
		start(t, d.db, slack, cfg, pager.DeliveryDebts(d.store, d.breaker))
	}
	require.Eventually(t, func() bool { return len(slack.messages()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	var owed int
	require.Eventually(t, func() bool {
		require.NoError(t, d.db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE page_owed IS NOT NULL`).Scan(ctx, &owed))
		return owed == 0
	}, 5*time.Second, 10*time.Millisecond)
	all := strings.Join(slack.messages(), "\n---\n")
	require.Contains(t, all, fmt.Sprintf("events dead-lettered — %d in the last", dead))
	require.Contains(t, all, "circuit opened: deliveries paused")
	require.Contains(t, all, "circuit closed: deliveries resumed")
	require.Len(t, slack.messages(), 3, "each owed page once: %s", all)
}
