package outbox_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
)

func ids(refs []outbox.EventRef) []uuid.UUID {
	out := make([]uuid.UUID, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// deadLetter claims the only due event, id, and settles it as a dead letter.
func (b *bundle) deadLetter(t *testing.T, id uuid.UUID) {
	t.Helper()
	rec := b.claimOne(t, id)
	dead := sent(outbox.StatusFailed, 422, "dead_letter")
	dead.FailedReason = "rejected_by_receiver"
	b.settle(t, rec, dead)
}

// deliver claims id, the only due event, and settles it delivered.
func (b *bundle) deliver(t *testing.T, id uuid.UUID) {
	t.Helper()
	b.settle(t, b.claimOne(t, id), sent(outbox.StatusDelivered, 200, "delivered"))
}

func (b *bundle) claimNone(t *testing.T) {
	t.Helper()
	recs, err := b.store.Claim(b.ctx, b.db, "test", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, recs)
}

// A dead head holds its aggregate back; skipped, it no longer does: the claim treats
// it like a delivered event, the next event goes, and the skipped one is never
// claimed again. Its history stays.
func TestSkipLetsTheAggregateGoOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	head := b.enqueue(t, "agg", 1, "thing.created")
	next := b.enqueue(t, "agg", 2, "thing.changed")
	b.deadLetter(t, head)
	b.claimNone(t)

	got := notified(t, b, b.store.Skip, head)
	require.Equal(t, outbox.StatusSkipped, got.Status)
	require.NotNil(t, got.SkippedAt)
	require.Equal(t, "rejected_by_receiver", got.FailedReason, "why it died stays")
	require.Len(t, b.detail(t, head).AttemptLog, 1)

	b.deliver(t, next)
	b.claimNone(t)

	_, err := b.store.Skip(b.ctx, b.db, head)
	require.ErrorIs(t, err, outbox.ErrNotDeadLetter, "skipped already")
	_, err = b.store.Skip(b.ctx, b.db, next)
	require.ErrorIs(t, err, outbox.ErrNotDeadLetter, "delivered")
	_, err = b.store.Skip(b.ctx, b.db, b.enqueue(t, "other", 1, "thing.created"))
	require.ErrorIs(t, err, outbox.ErrNotDeadLetter, "pending")
	_, err = b.store.Skip(b.ctx, b.db, uuid.New())
	require.ErrorIs(t, err, outbox.ErrNotFound)
	_, err = b.store.Retry(b.ctx, b.db, head)
	require.ErrorIs(t, err, outbox.ErrSkipped, "a skip is final")

	st, err := b.store.Stats(b.ctx, b.db)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Skipped)
	require.EqualValues(t, 1, st.Delivered)
	require.EqualValues(t, 1, st.Pending)
	page, err := b.store.List(b.ctx, b.db, outbox.Filter{Status: outbox.StatusSkipped})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{head}, []uuid.UUID{page.Items[0].ID})
}

// Skip by filter takes dead letters only, oldest first, at most the limit; its dry run
// says the same numbers and changes nothing.
func TestSkipMatchingIsBoundedAndItsCountChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var dead []uuid.UUID
	for i := range 5 {
		id := b.enqueue(t, "a-"+string(rune('0'+i)), 1, "type.a")
		b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed', created_at = now() - make_interval(mins => ?) WHERE id = ?`, 10-i, id)
		dead = append(dead, id)
	}
	otherType := b.enqueue(t, "b-0", 1, "type.b")
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed' WHERE id = ?`, otherType)
	pending := b.enqueue(t, "p-0", 1, "type.a")

	count, err := b.store.CountSkippable(b.ctx, b.db, outbox.Filter{Type: "type.a", Limit: 3})
	require.NoError(t, err)
	require.Equal(t, outbox.BulkResult{Count: 3, More: true}, count)
	for _, id := range dead {
		require.Equal(t, outbox.StatusFailed, b.detail(t, id).Status, "a count changes nothing")
	}

	res := notified(t, b, b.store.SkipMatching, outbox.Filter{Type: "type.a", Limit: 3})
	require.Equal(t, 3, res.Count)
	require.True(t, res.More)
	require.Equal(t, dead[:3], ids(res.Changed))
	require.Equal(t, "a-0", res.Changed[0].AggregateKey)

	count, err = b.store.CountSkippable(b.ctx, b.db, outbox.Filter{Type: "type.a"})
	require.NoError(t, err)
	require.Equal(t, outbox.BulkResult{Count: 2}, count)
	res, err = b.store.SkipMatching(b.ctx, b.db, outbox.Filter{Type: "type.a"})
	require.NoError(t, err)
	require.Equal(t, dead[3:], ids(res.Changed))
	require.False(t, res.More)

	require.Equal(t, outbox.StatusFailed, b.detail(t, otherType).Status)
	require.Equal(t, outbox.StatusPending, b.detail(t, pending).Status)
	for _, f := range []outbox.Filter{{Status: outbox.StatusPending}, {Status: outbox.StatusDelivered},
		{After: &outbox.Cursor{}}, {Limit: outbox.MaxRetryLimit + 1}} {
		_, err := b.store.SkipMatching(b.ctx, b.db, f)
		var fe *outbox.FilterError
		require.ErrorAs(t, err, &fe, "%+v", f)
		_, err = b.store.CountSkippable(b.ctx, b.db, f)
		require.ErrorAs(t, err, &fe, "%+v", f)
	}
}

// Retry by filter's dry run answers what the retry then does, and writes nothing.
func TestCountRetryableMatchesTheRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 4 {
		b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed', delivery_attempts = 8 WHERE id = ?`,
			b.enqueue(t, "r-"+string(rune('0'+i)), 1, "type.r"))
	}
	count, err := b.store.CountRetryable(b.ctx, b.db, outbox.Filter{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, outbox.BulkResult{Count: 3, More: true}, count)
	st, err := b.store.Stats(b.ctx, b.db)
	require.NoError(t, err)
	require.EqualValues(t, 4, st.Failed, "a count changes nothing")

	res, err := b.store.RetryMatching(b.ctx, b.db, outbox.Filter{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, count.Count, res.Count)
	require.Equal(t, count.More, res.More)
	_, err = b.store.CountRetryable(b.ctx, b.db, outbox.Filter{Status: outbox.StatusSkipped})
	var fe *outbox.FilterError
	require.ErrorAs(t, err, &fe)
}

// A delivered event resent goes out again under the same key with the next attempt
// number; until it is delivered again, its aggregate's later undelivered events wait.
func TestResendSendsADeliveredEventAgainUnderItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.enqueue(t, "agg", 1, "thing.created")
	b.deliver(t, first)
	_, err := b.store.Resend(b.ctx, b.db, b.enqueue(t, "agg", 2, "thing.changed"))
	require.ErrorIs(t, err, outbox.ErrNotDelivered, "a pending event is retried, not resent")

	got := notified(t, b, b.store.Resend, first)
	require.Equal(t, outbox.StatusPending, got.Status)
	require.Nil(t, got.DeliveredAt)
	require.Zero(t, got.Attempts)
	require.Equal(t, 1, got.Requests)

	recs, err := b.store.Claim(b.ctx, b.db, "test", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1, "the later event waits behind the resent one")
	require.Equal(t, first, recs[0].ID)
	require.Equal(t, "thing.created:agg:1", recs[0].IdempotencyKey)
	require.Equal(t, 1, recs[0].Requests, "the next request is X-Attempt 2")
	b.settle(t, recs[0], sent(outbox.StatusDelivered, 200, "delivered"))
	require.Len(t, b.detail(t, first).AttemptLog, 2)

	_, err = b.store.Resend(b.ctx, b.db, uuid.New())
	require.ErrorIs(t, err, outbox.ErrNotFound)
}

// Retarget moves the pending and failed events of one destination, all due now with a
// fresh budget; delivered, skipped and other destinations' events stay where they are.
func TestRetargetMovesUndeliveredEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const old, current = "http://127.0.0.1:9/hook", "http://127.0.0.1:10/hook"
	waiting := b.enqueue(t, "w", 1, "t")
	failed := b.enqueue(t, "f", 1, "t")
	delivered := b.enqueue(t, "d", 1, "t")
	skipped := b.enqueue(t, "s", 1, "t")
	elsewhere := b.enqueue(t, "e", 1, "t")
	b.exec(t, `UPDATE kit_outbox SET delivery_attempts = 3, next_attempt_at = now() + interval '1 hour' WHERE id = ?`, waiting)
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed', delivery_attempts = 8 WHERE id = ?`, failed)
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'delivered', delivered_at = now() WHERE id = ?`, delivered)
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'skipped', skipped_at = now() WHERE id = ?`, skipped)
	b.exec(t, `UPDATE kit_outbox SET destination = 'http://127.0.0.1:11/hook' WHERE id = ?`, elsewhere)

	conn := b.listen(t)
	moved, err := b.store.Retarget(b.ctx, b.db, old, current)
	require.NoError(t, err)
	requireNotified(t, conn)
	require.Equal(t, []uuid.UUID{waiting, failed}, ids(moved))

	w := b.detail(t, waiting)
	require.Equal(t, current, w.Destination)
	require.Zero(t, w.Attempts)
	require.False(t, w.NextAttemptAt.After(time.Now().Add(time.Second)), "due now")
	f := b.detail(t, failed)
	require.Equal(t, current, f.Destination)
	require.Equal(t, outbox.StatusPending, f.Status, "a dead letter of the old destination goes again")
	require.Zero(t, f.Attempts)
	require.Empty(t, f.FailedReason)
	require.False(t, f.NextAttemptAt.After(time.Now().Add(time.Second)), "due now")
	for _, id := range []uuid.UUID{delivered, skipped} {
		require.Equal(t, old, b.detail(t, id).Destination)
	}
	require.Equal(t, "http://127.0.0.1:11/hook", b.detail(t, elsewhere).Destination)

	again, err := b.store.Retarget(b.ctx, b.db, old, current)
	require.NoError(t, err)
	require.Empty(t, again)
	for _, from := range []string{"", current} {
		_, err := b.store.Retarget(b.ctx, b.db, from, current)
		var fe *outbox.FilterError
		require.ErrorAs(t, err, &fe, from)
	}
}
