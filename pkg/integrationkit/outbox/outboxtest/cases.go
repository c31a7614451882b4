package outboxtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
)

// A second event under a key already stored is refused and not written, whatever
// else it says; an event missing what a dispatcher needs is refused before any SQL.
func exerciseDuplicate(t *testing.T, s *suite) {
	id := s.enqueue(t, "agg", 1)
	again := event("other", 1)
	again.IdempotencyKey = event("agg", 1).IdempotencyKey
	_, err := s.store.Enqueue(s.ctx, s.db, again)
	require.ErrorIs(t, err, outbox.ErrDuplicate)

	noType := event("agg", 2)
	noType.Type = ""
	_, err = s.store.Enqueue(s.ctx, s.db, noType)
	require.Error(t, err)
	_, err = s.store.Enqueue(s.ctx, s.db, event("agg", 0))
	require.Error(t, err, "sequences start at 1")

	st, err := s.store.Stats(s.ctx, s.db)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Pending, "only the first event is stored")
	d := s.detail(t, id)
	require.Equal(t, "agg", d.AggregateKey)
	require.Equal(t, outbox.StatusPending, d.Status)
	require.Zero(t, d.Attempts)
	require.Equal(t, "corr-agg", d.CorrelationID)
	require.JSONEq(t, `{"aggregate":"agg","seq":1}`, string(d.Payload))
}

// The write is the caller's: rolled back with its business change, it leaves nothing;
// committed, it is claimable.
func exerciseTransaction(t *testing.T, s *suite) {
	rollback := errors.New("business change failed")
	err := s.db.RunInTx(s.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := s.store.Enqueue(ctx, tx, event("gone", 1))
		require.NoError(t, err)
		return rollback
	})
	require.ErrorIs(t, err, rollback)
	s.claimNone(t)

	err = s.db.RunInTx(s.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := s.store.Enqueue(ctx, tx, event("kept", 1))
		return err
	})
	require.NoError(t, err)
	require.Contains(t, s.claim(t), "kept")
}

// Only the earliest undelivered event of each aggregate is handed out; the next goes
// once it is delivered, and the record carries what the request needs.
func exerciseHeads(t *testing.T, s *suite) {
	a1 := s.enqueue(t, "a", 1)
	a2 := s.enqueue(t, "a", 2)
	s.enqueue(t, "a", 3)
	b1 := s.enqueue(t, "b", 1)

	got := s.claim(t)
	require.Len(t, got, 2)
	require.Equal(t, a1, got["a"].ID)
	require.Equal(t, b1, got["b"].ID)
	rec := got["a"]
	require.Equal(t, event("a", 1).IdempotencyKey, rec.IdempotencyKey)
	require.Equal(t, int64(1), rec.Sequence)
	require.Equal(t, "outboxtest.happened", rec.EventType)
	require.Equal(t, "http://127.0.0.1:9/hook", rec.Destination)
	require.Zero(t, rec.Requests)
	require.JSONEq(t, `{"aggregate":"a","seq":1}`, string(rec.Payload))

	s.settle(t, rec, delivered())
	got = s.claim(t)
	require.Len(t, got, 1, "b's head is still leased")
	require.Equal(t, a2, got["a"].ID)
}

// A live lease keeps an event from every other claim; a lapsed one lets it be
// claimed again under a new token.
func exerciseLease(t *testing.T, s *suite) {
	id := s.enqueue(t, "agg", 1)
	first := s.claimOne(t, id)
	s.claimNone(t)
	require.True(t, s.detail(t, id).InFlight)

	s.settle(t, first, sent(outbox.StatusPending, 503, "retry")) // due again at once
	// A zero lease has lapsed by the next statement's now().
	lapsed := s.claimFor(t, 0)["agg"]
	require.Equal(t, id, lapsed.ID)
	again := s.claimOne(t, id)
	require.NotEqual(t, lapsed.LeaseToken, again.LeaseToken)
	require.Equal(t, 1, again.Requests)
}

// A claim told to leave destinations leaves their events queued, and claims them once
// no longer told to; an event left out still holds back the next of its aggregate,
// whatever that one's destination.
func exerciseExcept(t *testing.T, s *suite) {
	const elsewhere = "http://127.0.0.1:9/elsewhere"
	here := s.enqueue(t, "here", 1)
	there := event("mixed", 1)
	there.Destination = elsewhere
	thereID, err := s.store.Enqueue(s.ctx, s.db, there)
	require.NoError(t, err)
	s.enqueue(t, "mixed", 2) // to the usual destination, behind the one left out

	recs, err := s.store.ClaimExcept(s.ctx, s.db, "outboxtest", 100, time.Minute, []string{elsewhere})
	require.NoError(t, err)
	require.Len(t, recs, 1, "neither the event left out nor the one behind it")
	require.Equal(t, here, recs[0].ID)
	require.False(t, s.detail(t, thereID).InFlight, "a destination left out is not leased")
	s.claimOne(t, thereID)
}

// A worker whose lease was taken over settles nothing: the newer outcome stays, and
// no attempt of its is logged.
func exerciseFencing(t *testing.T, s *suite) {
	id := s.enqueue(t, "agg", 1)
	slow := s.claimFor(t, 0)["agg"]
	fast := s.claimOne(t, id)
	s.settle(t, fast, delivered())

	err := s.store.Settle(s.ctx, s.db, slow, deadLetter())
	require.ErrorIs(t, err, outbox.ErrLeaseLost)
	settled, err := s.store.SettleMany(s.ctx, s.db, []outbox.Settlement{{Record: slow, Outcome: deadLetter()}})
	require.NoError(t, err)
	require.Empty(t, settled)
	require.NoError(t, s.store.Release(s.ctx, s.db, slow))

	d := s.detail(t, id)
	require.Equal(t, outbox.StatusDelivered, d.Status)
	require.Equal(t, 1, d.Requests)
	require.Empty(t, d.FailedReason)
	require.Len(t, d.AttemptLog, 1)
}
