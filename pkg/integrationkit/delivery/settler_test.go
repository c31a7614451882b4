package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// A round closes as soon as every request in flight has reported; while some have
// not, it waits for them at most settleLinger.
func TestSettlerRoundWaitsOnlyForRequestsInFlight(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		inflight int
		queued   int // reported besides the round's first
		want     int
		lingers  bool
	}{
		{"alone", 1, 0, 1, false},
		{"all reported", 3, 2, 3, false},
		{"one still in flight", 4, 2, 3, true},
		{"round full", 20, 8, 8, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSettler(nil, func() int { return c.inflight }, 8)
			for range c.queued {
				s.in <- settleCall{}
			}
			start := time.Now()
			round := s.gather(settleCall{})
			took := time.Since(start)
			require.Len(t, round, c.want)
			if c.lingers {
				require.GreaterOrEqual(t, took, settleLinger)
			}
		})
	}
}

// A round whose one statement is refused is settled item by item: the refused
// settlement fails alone (its lease will expire), and the others are settled, so one
// bad row never holds back the requests that reported beside it.
func TestSettlerRoundSettlesTheOthersWhenOneIsRefused(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	for i := range 3 {
		_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: fmt.Sprintf("a%d", i), Sequence: 1,
			IdempotencyKey: fmt.Sprintf("k%d", i), Destination: "http://127.0.0.1:9/", Payload: map[string]int{"i": i}})
		require.NoError(t, err)
	}
	recs, err := store.Claim(ctx, db, "settler-test", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	// An attempt row the outbox does not count: writing attempt 1 of recs[0] is refused.
	_, err = db.ExecContext(ctx, `INSERT INTO `+outboxtest.Table+`_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
		VALUES (?, 1, now(), 1, 'retry')`, recs[0].ID)
	require.NoError(t, err)

	s := newSettler(&Dispatcher{db: db, store: store, log: slog.New(slog.DiscardHandler)}, func() int { return 3 }, 8)
	calls := make([]settleCall, len(recs))
	for i, rec := range recs {
		calls[i] = settleCall{done: make(chan settleAnswer, 1), item: outbox.Settlement{Record: rec, Outcome: outbox.Outcome{
			Status: outbox.StatusDelivered, Counted: true, Sent: true, StartedAt: time.Now(), StatusCode: 200, Label: "delivered"}}}
	}
	s.round(ctx, calls)
	first := <-calls[0].done
	require.False(t, first.settled)
	require.Error(t, first.err, "the refused settlement fails")
	for _, c := range calls[1:] {
		a := <-c.done
		require.NoError(t, a.err)
		require.True(t, a.settled, "the others are settled")
	}
}

// Two outcomes of one event in a round (its lease expired and it was claimed again
// before the first outcome was settled): the one under the current lease is settled, and
// the other is told it was not, whatever their order in the round.
func TestSettlerRoundTellsAStaleLeaseItWasNotSettled(t *testing.T) {
	t.Parallel()
	for _, staleFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("stale first: ", staleFirst), func(t *testing.T) {
			t.Parallel()
			staleAndCurrentInOneRound(t, staleFirst)
		})
	}
}

func staleAndCurrentInOneRound(t *testing.T, staleFirst bool) {
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: "a", Sequence: 1,
		IdempotencyKey: "k", Destination: "http://127.0.0.1:9/", Payload: map[string]int{"i": 1}})
	require.NoError(t, err)
	stale, err := store.Claim(ctx, db, "settler-test", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, stale, 1)
	_, err = db.ExecContext(ctx, `UPDATE `+outboxtest.Table+` SET lease_expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	current, err := store.Claim(ctx, db, "settler-test", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, current, 1)

	s := newSettler(&Dispatcher{db: db, store: store, log: slog.New(slog.DiscardHandler)}, func() int { return 2 }, 8)
	call := func(rec outbox.Record, out outbox.Outcome) settleCall {
		return settleCall{done: make(chan settleAnswer, 1), item: outbox.Settlement{Record: rec, Outcome: out}}
	}
	// The late request timed out; the current one was answered 200.
	old := call(stale[0], outbox.Outcome{Status: outbox.StatusPending, Counted: true, Sent: true, RetryIn: time.Minute,
		StartedAt: time.Now(), ErrorClass: "timeout", Error: "timeout", Label: "retry"})
	now := call(current[0], outbox.Outcome{Status: outbox.StatusDelivered, Counted: true, Sent: true,
		StartedAt: time.Now(), StatusCode: 200, Label: "delivered"})
	if staleFirst {
		s.round(ctx, []settleCall{old, now})
	} else {
		s.round(ctx, []settleCall{now, old})
	}
	oldAnswer, nowAnswer := <-old.done, <-now.done
	require.NoError(t, oldAnswer.err)
	require.NoError(t, nowAnswer.err)
	require.False(t, oldAnswer.settled, "the outcome under the expired lease was not written")
	require.True(t, nowAnswer.settled)
	var status, labels string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT o.delivery_status, string_agg(a.outcome, ',')
		FROM `+outboxtest.Table+` AS o LEFT JOIN `+outboxtest.Table+`_attempts AS a ON a.outbox_id = o.id
		GROUP BY o.delivery_status`).Scan(&status, &labels))
	require.Equal(t, outbox.StatusDelivered, status, "the current lease's outcome was written")
	require.Equal(t, "delivered", labels, "one attempt, the current lease's")
}
