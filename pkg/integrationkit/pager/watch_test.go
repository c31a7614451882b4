package pager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/pager"
)

// The dispatcher's dead letters, 401/403 answers and circuit changes, and an old
// pending event, each page under their own key.
func TestWhatThePagerWatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _, store := outboxtest.Setup(t)
	_, err := db.NewRaw(schema).Exec(ctx)
	require.NoError(t, err)
	slack := newSlack(t, 0, false)
	p := start(t, db, slack, pager.Config{AggregateLabel: "order", Gather: time.Millisecond, Poll: 20 * time.Millisecond})

	rec := outbox.Record{ID: uuid.New(), AggregateKey: "order-9", Destination: "http://dest"}
	obs := p.DeliveryObserver()
	obs.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusFailed, FailedReason: "rejected_by_receiver",
		Error: "HTTP 422", Snippet: `{"type":"invalid-event"}`, Sent: true, StatusCode: 422})
	obs.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusPending, Sent: true, StatusCode: 401, Error: "HTTP 401"})
	obs.Settled(ctx, rec, outbox.Outcome{Status: outbox.StatusDelivered, Sent: true, StatusCode: 200})
	obs.CircuitChanged(ctx, "http://dest", breaker.Opened, rec)

	id, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: "order-1", Sequence: 1,
		IdempotencyKey: "k", Destination: "http://dest", Payload: 1})
	require.NoError(t, err)
	require.NoError(t, p.CheckPending(ctx, db, store, time.Minute), "a young event pages nothing")
	_, err = db.NewRaw(`UPDATE kit_outbox SET created_at = now() - interval '10 minutes'`).Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, p.CheckPending(ctx, db, store, 5*time.Minute))

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
	require.Contains(t, all, "e.g. event "+rec.ID.String()+", order order-9, last error: rejected_by_receiver: HTTP 422 — {\"type\":\"invalid-event\"}")
	require.Contains(t, all, "e.g. event "+id.String()+", order order-1")
}
