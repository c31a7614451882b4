package outbox_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
)

// A deferral by an open circuit keeps the event's real last error and marks the row
// deferred; Hasten makes exactly the deferred events due, not those waiting out a
// backoff; the next real request clears the mark.
func TestDeferralKeepsTheLastErrorAndIsHastened(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deferred := b.enqueue(t, "agg-1", 1, "thing.happened")
	backingOff := b.enqueue(t, "agg-2", 1, "thing.happened")

	for _, id := range []uuid.UUID{deferred, backingOff} {
		b.exec(t, `UPDATE kit_outbox SET next_attempt_at = now() + interval '1 hour' WHERE id <> ?`, id)
		b.exec(t, `UPDATE kit_outbox SET next_attempt_at = now() WHERE id = ?`, id)
		out := sent(outbox.StatusPending, 503, "retry")
		out.RetryIn = time.Hour
		b.settle(t, b.claimOne(t, id), out)
	}
	b.exec(t, `UPDATE kit_outbox SET next_attempt_at = now() WHERE id = ?`, deferred)
	rec := b.claimOne(t, deferred)
	require.NoError(t, b.store.Settle(b.ctx, b.db, rec, outbox.Outcome{Status: outbox.StatusPending,
		RetryIn: time.Hour, DeferredBy: outbox.DeferredByCircuit, Label: "circuit_open"}))

	ev := b.detail(t, deferred)
	require.Equal(t, "HTTP 503", ev.LastError, "the deferral keeps the real error")
	require.Equal(t, "HTTP 503", ev.LastFailure())
	require.NotNil(t, ev.DeferredAt)
	require.Len(t, ev.AttemptLog, 1, "a deferral sends no request")
	require.Nil(t, b.detail(t, backingOff).DeferredAt)

	n, err := b.store.Hasten(b.ctx, b.db, "http://127.0.0.1:9/hook", outbox.DeferredByCircuit)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the deferred event is hastened")
	b.deliver(t, deferred)
	require.Nil(t, b.detail(t, deferred).DeferredAt, "a real request clears the deferral")
}
