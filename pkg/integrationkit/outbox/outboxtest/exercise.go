package outboxtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// Exercise runs the outbox store's contract as subtests against an adopter's real
// table: newDB gives each subtest a database of its own holding table (and
// table_attempts), empty and migrated as the adopter migrates it, and Exercise writes,
// claims and settles events there through outbox.Store. A table whose constraints,
// defaults or indexes drift from outbox.Schema in a way the store notices fails here.
//
// It pins what a dispatcher and the operators rely on: a duplicate key is refused
// (outbox.ErrDuplicate) and a rolled-back write leaves nothing; a claim hands out
// only the head of each aggregate, in sequence order, and none of the destinations it
// is told to leave; a settle under a stale lease
// changes nothing (outbox.ErrLeaseLost); delivered, retry and dead-letter outcomes,
// a deferral without a request, Retry, Skip, Resend and Release do what their
// documentation says.
func Exercise(t *testing.T, newDB func(t *testing.T) *bun.DB, table string) {
	t.Helper()
	setup := func(t *testing.T) *suite {
		t.Helper()
		store, err := outbox.NewStore(table)
		require.NoError(t, err)
		return &suite{ctx: context.Background(), db: newDB(t), store: store}
	}
	pgtest.RunParallel(t, setup, []pgtest.Case[*suite]{
		{Name: "EnqueueRefusesADuplicateKey", Run: exerciseDuplicate},
		{Name: "EnqueueJoinsTheCallersTransaction", Run: exerciseTransaction},
		{Name: "ClaimHandsOutHeadsInSequence", Run: exerciseHeads},
		{Name: "ClaimLeasesUntilTheLeaseLapses", Run: exerciseLease},
		{Name: "ClaimExceptLeavesDestinationsQueued", Run: exerciseExcept},
		{Name: "StaleLeaseSettlesNothing", Run: exerciseFencing},
		{Name: "SettleOutcomes", Run: exerciseOutcomes},
		{Name: "DeadLetterHoldsBackOnlyItsAggregate", Run: exerciseDeadHead},
		{Name: "DeferralSendsNoRequestAndIsHastened", Run: exerciseDeferral},
		{Name: "RetrySkipAndResend", Run: exerciseOperators},
		{Name: "ReleaseMakesEventsClaimableAtOnce", Run: exerciseRelease},
	})
}

// suite is one subtest's database and store.
type suite struct {
	ctx   context.Context
	db    *bun.DB
	store *outbox.Store
}

// event is event seq of aggregate agg, keyed by both.
func event(agg string, seq int64) outbox.Event {
	return outbox.Event{Type: "outboxtest.happened", AggregateKey: agg, Sequence: seq,
		IdempotencyKey: fmt.Sprintf("outboxtest:%s:%d", agg, seq), Destination: "http://127.0.0.1:9/hook",
		Payload: map[string]any{"aggregate": agg, "seq": seq}, CorrelationID: "corr-" + agg}
}

func (s *suite) enqueue(t *testing.T, agg string, seq int64) uuid.UUID {
	t.Helper()
	id, err := s.store.Enqueue(s.ctx, s.db, event(agg, seq))
	require.NoError(t, err)
	return id
}

// claim claims every due event under a lease of a minute and returns them by
// aggregate, failing the test if an aggregate has two.
func (s *suite) claim(t *testing.T) map[string]outbox.Record {
	t.Helper()
	return s.claimFor(t, time.Minute)
}

// claimFor is claim under lease.
func (s *suite) claimFor(t *testing.T, lease time.Duration) map[string]outbox.Record {
	t.Helper()
	recs, err := s.store.Claim(s.ctx, s.db, "outboxtest", 100, lease)
	require.NoError(t, err)
	byAgg := map[string]outbox.Record{}
	for _, r := range recs {
		_, twice := byAgg[r.AggregateKey]
		require.False(t, twice, "two events of aggregate %s handed out at once", r.AggregateKey)
		byAgg[r.AggregateKey] = r
	}
	return byAgg
}

// claimOne claims the only due event and checks it is id.
func (s *suite) claimOne(t *testing.T, id uuid.UUID) outbox.Record {
	t.Helper()
	return ClaimOne(t, s.db, s.store, id)
}

// ClaimOne claims the due events of store in db under a lease of a minute, requires
// them to be the one event id, and returns its record.
func ClaimOne(t testing.TB, db bun.IDB, store *outbox.Store, id uuid.UUID) outbox.Record {
	t.Helper()
	recs, err := store.Claim(context.Background(), db, "outboxtest", 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, id, recs[0].ID)
	return recs[0]
}

func (s *suite) claimNone(t *testing.T) {
	t.Helper()
	require.Empty(t, s.claim(t))
}

func (s *suite) detail(t *testing.T, id uuid.UUID) outbox.EventDetail {
	t.Helper()
	d, err := s.store.Detail(s.ctx, s.db, id)
	require.NoError(t, err)
	return d
}

func (s *suite) settle(t *testing.T, rec outbox.Record, out outbox.Outcome) {
	t.Helper()
	require.NoError(t, s.store.Settle(s.ctx, s.db, rec, out))
}

// sent is the outcome of a request answered with code.
func sent(status string, code int, label string) outbox.Outcome {
	return outbox.Outcome{Status: status, Counted: true, Sent: true, StartedAt: time.Now(),
		Duration: 12 * time.Millisecond, StatusCode: code, Error: fmt.Sprintf("HTTP %d", code), Label: label}
}

func delivered() outbox.Outcome {
	out := sent(outbox.StatusDelivered, 200, "delivered")
	out.Error = ""
	return out
}

func deadLetter() outbox.Outcome {
	out := sent(outbox.StatusFailed, 422, "dead_letter")
	out.FailedReason = "rejected_by_receiver"
	return out
}
