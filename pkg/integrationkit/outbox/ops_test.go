package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

type bundle struct {
	ctx   context.Context
	db    *bun.DB
	url   string
	store *outbox.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db, url, store := outboxtest.Setup(t)
	return &bundle{ctx: context.Background(), db: db, url: url, store: store}
}

// enqueue writes event seq of aggregate agg with type typ and returns its id.
func (b *bundle) enqueue(t *testing.T, agg string, seq int64, typ string) uuid.UUID {
	t.Helper()
	id, err := b.store.Enqueue(b.ctx, b.db, outbox.Event{
		Type: typ, AggregateKey: agg, Sequence: seq, IdempotencyKey: fmt.Sprintf("%s:%s:%d", typ, agg, seq),
		Destination: "http://127.0.0.1:9/hook", Payload: map[string]any{"n": seq},
	})
	require.NoError(t, err)
	return id
}

// exec runs setup SQL that puts rows into states the test needs.
func (b *bundle) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	_, err := b.db.NewRaw(query, args...).Exec(b.ctx)
	require.NoError(t, err)
}

// claimOne claims the only due event and checks it is id.
func (b *bundle) claimOne(t *testing.T, id uuid.UUID) outbox.Record {
	t.Helper()
	return outboxtest.ClaimOne(t, b.db, b.store, id)
}

func sent(status string, code int, label string) outbox.Outcome {
	return outbox.Outcome{Status: status, Counted: true, Sent: true, StartedAt: time.Now(),
		Duration: 12 * time.Millisecond, StatusCode: code, Error: fmt.Sprintf("HTTP %d", code), Label: label}
}

func (b *bundle) detail(t *testing.T, id uuid.UUID) outbox.EventDetail {
	t.Helper()
	d, err := b.store.Detail(b.ctx, b.db, id)
	require.NoError(t, err)
	return d
}

// listen returns a connection LISTENing on the outbox channel.
func (b *bundle) listen(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgtest.Connect(b.ctx, b.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(b.ctx, "LISTEN "+pgx.Identifier{b.store.Channel()}.Sanitize())
	require.NoError(t, err)
	return conn
}

// settle settles rec with out.
func (b *bundle) settle(t *testing.T, rec outbox.Record, out outbox.Outcome) {
	t.Helper()
	require.NoError(t, b.store.Settle(b.ctx, b.db, rec, out))
}

// notified runs an operator's change of the store on arg, requires it to succeed and
// to wake the dispatchers, and returns what it returned.
func notified[A, R any](t *testing.T, b *bundle, change func(context.Context, bun.IDB, A) (R, error), arg A) R {
	t.Helper()
	conn := b.listen(t)
	got, err := change(b.ctx, b.db, arg)
	require.NoError(t, err)
	requireNotified(t, conn)
	return got
}

func requireNotified(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := conn.WaitForNotification(ctx)
	require.NoError(t, err, "dispatchers are woken")
}

// A dead letter replayed by hand: its history stays, its budget starts again, the
// next request carries the next attempt number, and dispatchers hear about it.
func TestRetryReplaysADeadLetterKeepingItsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "agg-1", 1, "thing.done")

	rec := b.claimOne(t, id)
	b.settle(t, rec, sent(outbox.StatusPending, 503, "retry"))
	rec = b.claimOne(t, id)
	dead := sent(outbox.StatusFailed, 400, "dead_letter")
	dead.FailedReason = "rejected: HTTP 400"
	b.settle(t, rec, dead)

	before := b.detail(t, id)
	require.Equal(t, outbox.StatusFailed, before.Status)
	require.Equal(t, 2, before.Attempts)
	require.Equal(t, "rejected: HTTP 400", before.FailedReason)

	got := notified(t, b, b.store.Retry, id)

	require.Equal(t, outbox.StatusPending, got.Status)
	require.Zero(t, got.Attempts, "the budget is reset")
	require.Equal(t, 2, got.Requests, "request numbers keep counting")
	require.Empty(t, got.FailedReason)
	require.Equal(t, "HTTP 400", got.LastError, "the last error stays visible")
	require.False(t, got.InFlight)
	require.Empty(t, got.LeaseOwner)
	require.Len(t, b.detail(t, id).AttemptLog, 2, "the history stays")

	rec = b.claimOne(t, id)
	require.Equal(t, 2, rec.Requests, "the next request is X-Attempt 3")
	b.settle(t, rec, sent(outbox.StatusDelivered, 200, "delivered"))
	after := b.detail(t, id)
	require.Equal(t, outbox.StatusDelivered, after.Status)
	require.Len(t, after.AttemptLog, 3)
	for i, a := range after.AttemptLog {
		require.Equal(t, i+1, a.No)
	}
	require.Equal(t, 400, after.AttemptLog[1].StatusCode)
	require.Equal(t, "dead_letter", after.AttemptLog[1].Outcome)
	require.Equal(t, 12*time.Millisecond, after.AttemptLog[1].Duration)
}

func TestRetryRefusesWhatItMustNotTouch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	delivered := b.enqueue(t, "agg-d", 1, "thing.done")
	b.deliver(t, delivered)

	_, err := b.store.Retry(b.ctx, b.db, delivered)
	require.ErrorIs(t, err, outbox.ErrDelivered)
	d := b.detail(t, delivered)
	require.Equal(t, outbox.StatusDelivered, d.Status)
	require.Equal(t, 1, d.Attempts)

	inflight := b.enqueue(t, "agg-f", 1, "thing.done")
	b.claimOne(t, inflight)
	_, err = b.store.Retry(b.ctx, b.db, inflight)
	require.ErrorIs(t, err, outbox.ErrInFlight)
	require.True(t, b.detail(t, inflight).InFlight)

	_, err = b.store.Retry(b.ctx, b.db, uuid.New())
	require.ErrorIs(t, err, outbox.ErrNotFound)
	_, err = b.store.Detail(b.ctx, b.db, uuid.New())
	require.ErrorIs(t, err, outbox.ErrNotFound)
}

// A pending event waiting for its next backoff step is made due now.
func TestRetryHastensAPendingEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "agg-p", 1, "thing.done")
	rec := b.claimOne(t, id)
	later := sent(outbox.StatusPending, 503, "retry")
	later.RetryIn = time.Hour
	b.settle(t, rec, later)

	got, err := b.store.Retry(b.ctx, b.db, id)
	require.NoError(t, err)
	require.Zero(t, got.Attempts)
	b.claimOne(t, id)
}

func TestRetryMatchingIsBoundedAndLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var failedA []uuid.UUID
	for i := range 5 {
		failedA = append(failedA, b.enqueue(t, fmt.Sprintf("a-%d", i), 1, "type.a"))
	}
	failedB := b.enqueue(t, "b-0", 1, "type.b")
	delivered := b.enqueue(t, "d-0", 1, "type.a")
	waiting := b.enqueue(t, "w-0", 1, "type.a")
	leased := b.enqueue(t, "l-0", 1, "type.a")
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed', delivery_attempts = 8, request_count = 8,
		failed_reason = 'budget spent' WHERE event_type = 'type.b' OR id IN (?)`, bun.List(failedA))
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'delivered', delivered_at = now(), delivery_attempts = 1
		WHERE id = ?`, delivered)
	b.exec(t, `UPDATE kit_outbox SET next_attempt_at = now() + interval '1 hour', delivery_attempts = 3 WHERE id IN (?, ?)`,
		waiting, leased)
	b.exec(t, `UPDATE kit_outbox SET lease_owner = 'other', lease_token = gen_random_uuid(),
		lease_expires_at = now() + interval '1 minute' WHERE id = ?`, leased)

	conn := b.listen(t)
	res, err := b.store.RetryMatching(b.ctx, b.db, outbox.Filter{Type: "type.a", Limit: 3})
	require.NoError(t, err)
	require.Equal(t, 3, res.Count)
	require.True(t, res.More)
	require.Equal(t, []uuid.UUID{failedA[0], failedA[1], failedA[2]}, ids(res.Changed), "oldest first")
	requireNotified(t, conn)
	res, err = b.store.RetryMatching(b.ctx, b.db, outbox.Filter{Type: "type.a", Limit: 3})
	require.NoError(t, err)
	require.Equal(t, 2, res.Count)
	require.False(t, res.More)
	res, err = b.store.RetryMatching(b.ctx, b.db, outbox.Filter{Type: "type.a"})
	require.NoError(t, err)
	require.Zero(t, res.Count)

	for _, id := range failedA {
		d := b.detail(t, id)
		require.Equal(t, outbox.StatusPending, d.Status)
		require.Zero(t, d.Attempts)
		require.Equal(t, 8, d.Requests)
	}
	require.Equal(t, outbox.StatusFailed, b.detail(t, failedB).Status, "other types stay")
	require.Equal(t, outbox.StatusDelivered, b.detail(t, delivered).Status, "delivered stays")
	require.Equal(t, 3, b.detail(t, waiting).Attempts, "pending stays unless asked for")

	res, err = b.store.RetryMatching(b.ctx, b.db, outbox.Filter{Status: outbox.StatusPending, Type: "type.a"})
	require.NoError(t, err)
	require.Equal(t, 1, res.Count, "only the waiting event: due ones need nothing, leased ones are in flight")
	require.Zero(t, b.detail(t, waiting).Attempts)
	require.Equal(t, 3, b.detail(t, leased).Attempts)
}

func TestRetryMatchingRefusesBadFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, f := range []outbox.Filter{
		{Status: outbox.StatusDelivered},
		{Status: outbox.StatusSkipped},
		{Status: "lost"},
		{Limit: outbox.MaxRetryLimit + 1},
		{After: &outbox.Cursor{}},
	} {
		_, err := b.store.RetryMatching(b.ctx, b.db, f)
		var fe *outbox.FilterError
		require.ErrorAs(t, err, &fe, "%+v", f)
	}
}

// Seven events created at controlled times (two at the same instant) are listed
// newest first, filtered, and paged without gaps or repeats.
func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []uuid.UUID
	for i := range 7 {
		typ := "type.a"
		if i%2 == 1 {
			typ = "type.b"
		}
		id := b.enqueue(t, fmt.Sprintf("agg-%d", i%3), int64(i/3+1), typ)
		at := base.Add(time.Duration(min(i, 5)) * time.Minute) // events 5 and 6 share a time
		b.exec(t, `UPDATE kit_outbox SET created_at = ? WHERE id = ?`, at, id)
		ids = append(ids, id)
	}
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed' WHERE id IN (?, ?)`, ids[1], ids[4])

	var seen []uuid.UUID
	f := outbox.Filter{Limit: 3}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		page, err := b.store.List(b.ctx, b.db, f)
		require.NoError(t, err)
		for _, ev := range page.Items {
			seen = append(seen, ev.ID)
		}
		if page.Next == nil {
			break
		}
		next, err := outbox.ParseCursor(page.Next.String())
		require.NoError(t, err)
		f.After = &next
	}
	require.Len(t, seen, 7)
	require.ElementsMatch(t, ids, seen)
	require.ElementsMatch(t, ids[5:], seen[:2], "newest first")
	require.Equal(t, ids[0], seen[6])

	count := func(f outbox.Filter) []uuid.UUID {
		page, err := b.store.List(b.ctx, b.db, f)
		require.NoError(t, err)
		out := []uuid.UUID{}
		for _, ev := range page.Items {
			out = append(out, ev.ID)
		}
		return out
	}
	require.Equal(t, []uuid.UUID{ids[4], ids[1]}, count(outbox.Filter{Status: outbox.StatusFailed}))
	require.ElementsMatch(t, []uuid.UUID{ids[1], ids[3], ids[5]}, count(outbox.Filter{Type: "type.b"}))
	require.ElementsMatch(t, []uuid.UUID{ids[0], ids[3], ids[6]}, count(outbox.Filter{AggregateKey: "agg-0"}))
	require.ElementsMatch(t, []uuid.UUID{ids[2], ids[3]}, count(outbox.Filter{
		CreatedFrom: base.Add(2 * time.Minute), CreatedTo: base.Add(4 * time.Minute)}))

	_, err := b.store.List(b.ctx, b.db, outbox.Filter{Limit: outbox.MaxListLimit + 1})
	require.Error(t, err)
	_, err = b.store.List(b.ctx, b.db, outbox.Filter{CreatedFrom: base, CreatedTo: base})
	require.Error(t, err)
}

func TestParseCursorRefusesForeignTokens(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "!!", "djE6MTIz", "bzE6eDp5", "bzE6MTIzOm5vdC1hLXV1aWQ"} {
		_, err := outbox.ParseCursor(s)
		require.Error(t, err, s)
	}
	c := outbox.Cursor{CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC), ID: uuid.New()}
	got, err := outbox.ParseCursor(c.String())
	require.NoError(t, err)
	require.Equal(t, c, got)
}

func TestStatsCountsByStatusAndAgesTheOldestPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	empty, err := b.store.Stats(b.ctx, b.db)
	require.NoError(t, err)
	require.Zero(t, empty.OldestPendingAge)
	require.False(t, empty.Now.IsZero())

	old := b.enqueue(t, "s-1", 1, "t")
	b.enqueue(t, "s-2", 1, "t")
	failed := b.enqueue(t, "s-3", 1, "t")
	delivered := b.enqueue(t, "s-4", 1, "t")
	b.exec(t, `UPDATE kit_outbox SET created_at = now() - interval '90 seconds' WHERE id = ?`, old)
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'failed' WHERE id = ?`, failed)
	b.exec(t, `UPDATE kit_outbox SET delivery_status = 'delivered', created_at = now() - interval '1 day' WHERE id = ?`, delivered)
	b.exec(t, `UPDATE kit_outbox SET lease_expires_at = now() + interval '1 minute' WHERE aggregate_key = 's-2'`)
	backingOff := b.enqueue(t, "s-5", 1, "t")
	b.exec(t, `UPDATE kit_outbox SET next_attempt_at = now() + interval '1 minute' WHERE id = ?`, backingOff)

	st, err := b.store.Stats(b.ctx, b.db)
	require.NoError(t, err)
	require.EqualValues(t, 3, st.Pending)
	require.EqualValues(t, 1, st.InFlight)
	require.EqualValues(t, 1, st.Due, "neither the leased one nor the one backing off")
	require.EqualValues(t, 1, st.Failed)
	require.EqualValues(t, 1, st.Delivered)
	require.InDelta(t, 90, st.OldestPendingAge.Seconds(), 5)
}

func TestAggregateListsEventsInSequenceWithAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.enqueue(t, "agg", 1, "x.created")
	second := b.enqueue(t, "agg", 2, "x.changed")
	b.exec(t, `UPDATE kit_outbox SET created_at = now() - interval '1 hour' WHERE id = ?`, second)
	b.deliver(t, first)
	b.enqueue(t, "other", 1, "x.created")

	got, err := b.store.Aggregate(b.ctx, b.db, "agg")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, first, got[0].ID)
	require.Equal(t, second, got[1].ID)
	require.Len(t, got[0].AttemptLog, 1)
	require.Empty(t, got[1].AttemptLog)
	require.JSONEq(t, `{"n":1}`, string(got[0].Payload))

	none, err := b.store.Aggregate(b.ctx, b.db, "nothing")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestAnswersReadWell(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a    outbox.Attempt
		want string
	}{
		{outbox.Attempt{StatusCode: 400, Error: "HTTP 400"}, "HTTP 400"},
		{outbox.Attempt{StatusCode: 200}, "HTTP 200"},
		{outbox.Attempt{ErrorClass: "timeout", Error: "context deadline exceeded"}, "timeout · context deadline exceeded"},
		{outbox.Attempt{ErrorClass: "connection_refused"}, "connection_refused"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.a.Answer())
	}
	require.Empty(t, outbox.StoredEvent{LastStatusCode: 200}.LastFailure(), "a delivered event has no failure")
	require.Equal(t, "HTTP 503", outbox.StoredEvent{LastStatusCode: 503, LastError: "HTTP 503"}.LastFailure())
}
