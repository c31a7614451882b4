package outboxtest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
)

// Each outcome writes the event's new state and one attempt row: a retry waits its
// delay and keeps counting requests, a dead letter keeps its reason, a delivery its
// time. SettleMany settles several events in one go.
func exerciseOutcomes(t *testing.T, s *suite) {
	retried := s.enqueue(t, "retried", 1)
	dead := s.enqueue(t, "dead", 1)
	done := s.enqueue(t, "done", 1)
	got := s.claim(t)
	require.Len(t, got, 3)

	later := sent(outbox.StatusPending, 503, "retry")
	later.RetryIn = time.Hour
	settled, err := s.store.SettleMany(s.ctx, s.db, []outbox.Settlement{
		{Record: got["retried"], Outcome: later},
		{Record: got["dead"], Outcome: deadLetter()},
		{Record: got["done"], Outcome: delivered()},
	})
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]bool{retried: true, dead: true, done: true}, settled)
	s.claimNone(t)

	r := s.detail(t, retried)
	require.Equal(t, outbox.StatusPending, r.Status)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, 1, r.Requests)
	require.Equal(t, "HTTP 503", r.LastError)
	require.Equal(t, 503, r.LastStatusCode)
	require.WithinDuration(t, time.Now().Add(time.Hour), r.NextAttemptAt, time.Minute)
	require.False(t, r.InFlight)
	wait, ok, err := s.store.NextDue(s.ctx, s.db)
	require.NoError(t, err)
	require.True(t, ok)
	require.InDelta(t, time.Hour.Seconds(), wait.Seconds(), 60)

	d := s.detail(t, dead)
	require.Equal(t, outbox.StatusFailed, d.Status)
	require.Equal(t, "rejected_by_receiver", d.FailedReason)
	require.Len(t, d.AttemptLog, 1)
	require.Equal(t, 422, d.AttemptLog[0].StatusCode)
	require.Equal(t, "dead_letter", d.AttemptLog[0].Outcome)
	require.Equal(t, 12*time.Millisecond, d.AttemptLog[0].Duration)

	ok2 := s.detail(t, done)
	require.Equal(t, outbox.StatusDelivered, ok2.Status)
	require.NotNil(t, ok2.DeliveredAt)
	require.Len(t, ok2.AttemptLog, 1)
	require.Equal(t, 1, ok2.AttemptLog[0].No)

	st, err := s.store.Stats(s.ctx, s.db)
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 1, 1}, [3]int64{st.Pending, st.Failed, st.Delivered})
}

// A dead head holds back the later events of its own aggregate and of no other.
func exerciseDeadHead(t *testing.T, s *suite) {
	head := s.enqueue(t, "stuck", 1)
	s.enqueue(t, "stuck", 2)
	free1 := s.enqueue(t, "free", 1)
	free2 := s.enqueue(t, "free", 2)

	got := s.claim(t)
	require.Equal(t, head, got["stuck"].ID)
	require.Equal(t, free1, got["free"].ID)
	s.settle(t, got["stuck"], deadLetter())
	s.settle(t, got["free"], delivered())

	got = s.claim(t)
	require.Len(t, got, 1)
	require.Equal(t, free2, got["free"].ID)
}

// A deferral (the destination's circuit open, or paused) sends nothing: no attempt
// row, no budget spent, the last real error kept; Hasten makes it due again.
func exerciseDeferral(t *testing.T, s *suite) {
	id := s.enqueue(t, "agg", 1)
	s.settle(t, s.claimOne(t, id), sent(outbox.StatusPending, 503, "retry"))
	s.settle(t, s.claimOne(t, id), outbox.Outcome{Status: outbox.StatusPending, RetryIn: time.Hour,
		DeferredBy: outbox.DeferredByCircuit, Label: "circuit_open"})
	s.claimNone(t)

	d := s.detail(t, id)
	require.Len(t, d.AttemptLog, 1, "a deferral sends no request")
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, "HTTP 503", d.LastError)
	require.NotNil(t, d.DeferredAt)
	require.Equal(t, outbox.DeferredByCircuit, d.DeferredBy)

	n, err := s.store.Hasten(s.ctx, s.db, "http://127.0.0.1:9/hook", outbox.DeferredByCircuit)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	s.settle(t, s.claimOne(t, id), delivered())
	require.Nil(t, s.detail(t, id).DeferredAt, "a real request clears the deferral")
}

// A dead letter retried goes again with a fresh budget and its history; skipped, it
// lets its aggregate go on; a delivered event resent goes again under its key.
func exerciseOperators(t *testing.T, s *suite) {
	head := s.enqueue(t, "agg", 1)
	next := s.enqueue(t, "agg", 2)
	s.settle(t, s.claimOne(t, head), deadLetter())

	got, err := s.store.Retry(s.ctx, s.db, head)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusPending, got.Status)
	require.Zero(t, got.Attempts)
	require.Equal(t, 1, got.Requests)
	require.Empty(t, got.FailedReason)
	rec := s.claimOne(t, head)
	require.Equal(t, 1, rec.Requests, "the next request is X-Attempt 2")
	s.settle(t, rec, deadLetter())

	_, err = s.store.Skip(s.ctx, s.db, next)
	require.ErrorIs(t, err, outbox.ErrNotDeadLetter)
	skipped, err := s.store.Skip(s.ctx, s.db, head)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusSkipped, skipped.Status)
	require.NotNil(t, skipped.SkippedAt)
	_, err = s.store.Retry(s.ctx, s.db, head)
	require.ErrorIs(t, err, outbox.ErrSkipped)
	s.settle(t, s.claimOne(t, next), delivered())

	_, err = s.store.Retry(s.ctx, s.db, next)
	require.ErrorIs(t, err, outbox.ErrDelivered)
	resent, err := s.store.Resend(s.ctx, s.db, next)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusPending, resent.Status)
	require.Nil(t, resent.DeliveredAt)
	rec = s.claimOne(t, next)
	require.Equal(t, event("agg", 2).IdempotencyKey, rec.IdempotencyKey)
	require.Equal(t, 1, rec.Requests)
	s.settle(t, rec, delivered())
	require.Len(t, s.detail(t, next).AttemptLog, 2)
}

// Released events are claimable again at once, with no attempt written; a release
// under a lease already taken over changes nothing.
func exerciseRelease(t *testing.T, s *suite) {
	a := s.enqueue(t, "a", 1)
	b := s.enqueue(t, "b", 1)
	got := s.claim(t)
	require.Len(t, got, 2)
	require.NoError(t, s.store.Release(s.ctx, s.db, got["a"], got["b"]))

	again := s.claim(t)
	require.Len(t, again, 2)
	require.Equal(t, a, again["a"].ID)
	require.Equal(t, b, again["b"].ID)
	require.Zero(t, again["a"].Requests)
	require.NoError(t, s.store.Release(s.ctx, s.db, got["a"]), "an old token")
	require.True(t, s.detail(t, a).InFlight, "the newer lease stands")
	require.Empty(t, s.detail(t, a).AttemptLog)
}
