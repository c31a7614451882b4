package retention_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/retention"
	"handoff/pkg/integrationkit/webhook"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// things is a table the purge tests delete from.
const things = `CREATE TABLE things (id bigint PRIMARY KEY, at timestamptz NOT NULL);`

type bundle struct {
	db    *bun.DB
	store *outbox.Store
	url   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	db, _, store := outboxtest.Setup(t)
	exec(t, db, retention.ArchiveSchema(outboxtest.Table)+things)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	return &bundle{db: db, store: store, url: srv.URL}
}

func exec(t *testing.T, db bun.IDB, query string, args ...any) {
	t.Helper()
	_, err := db.NewRaw(query, args...).Exec(context.Background())
	require.NoError(t, err)
}

func count(t *testing.T, db bun.IDB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.NewRaw(query, args...).Scan(context.Background(), &n))
	return n
}

// seed writes an event of aggregate agg aged by sql interval age in the given status,
// with two attempts.
func (b *bundle) seed(t *testing.T, agg, status, age string) {
	t.Helper()
	id, err := b.store.Enqueue(context.Background(), b.db, outbox.Event{
		Type: "thing.happened", AggregateKey: agg, Sequence: 1, IdempotencyKey: "k:" + agg,
		Destination: "http://127.0.0.1:1/never", Payload: map[string]string{"agg": agg},
	})
	require.NoError(t, err)
	delivered := "NULL"
	if status == outbox.StatusDelivered {
		delivered = "now() - interval '" + age + "'"
	}
	exec(t, b.db, `UPDATE kit_outbox SET delivery_status = ?, created_at = now() - ?::interval,
		delivered_at = `+delivered+`, request_count = 2, -- its two attempts below
		next_attempt_at = now() + interval '1 day' -- a pending one waits: the live dispatcher leaves it alone
		WHERE id = ?`, status, age, id)
	for n := 1; n <= 2; n++ {
		exec(t, b.db, `INSERT INTO kit_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
			VALUES (?, ?, now() - ?::interval, 5, 'retry')`, id, n, age)
	}
}

func (b *bundle) runner(t *testing.T) *retention.Runner {
	t.Helper()
	archive, err := retention.ArchiveOutbox(retention.ArchiveSpec{Outbox: "kit_outbox", OlderThan: 30 * 24 * time.Hour, Batch: 2})
	require.NoError(t, err)
	purgeArchive, err := retention.Purge(retention.PurgeSpec{Table: "kit_outbox_archive", Key: "id", Time: "delivered_at",
		OlderThan: 365 * 24 * time.Hour, Batch: 2})
	require.NoError(t, err)
	purgeThings, err := retention.Purge(retention.PurgeSpec{Table: "things", Key: "id", Time: "at",
		OlderThan: 90 * 24 * time.Hour, Batch: 2})
	require.NoError(t, err)
	r, err := retention.New(b.db, retention.Config{Tasks: []retention.Task{archive, purgeArchive, purgeThings}})
	require.NoError(t, err)
	return r
}

// dispatch delivers new events until the test ends, so retention runs beside live work.
func (b *bundle) dispatch(t *testing.T, n int) {
	t.Helper()
	allow, err := egress.ParseAllowlist("127.0.0.1/32") // the receiver's address
	require.NoError(t, err)
	d, err := delivery.New(b.db, b.store, webhook.NewSigner([][]byte{[]byte("0123456789abcdef0123456789abcdef")}),
		delivery.Config{Interval: time.Second, Backoff: backoff.Schedule{20 * time.Millisecond}},
		delivery.Deps{Log: slog.New(slog.DiscardHandler), Guard: egress.New(egress.Config{Allow: allow})})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	for i := range n {
		_, err := b.store.Enqueue(context.Background(), b.db, outbox.Event{
			Type: "thing.happened", AggregateKey: fmt.Sprintf("live-%d", i), Sequence: 1,
			IdempotencyKey: fmt.Sprintf("live:%d", i), Destination: b.url, Payload: map[string]int{"i": i},
		})
		require.NoError(t, err)
	}
}

// Rows past their windows are archived or purged exactly, the others untouched; a
// second run finds nothing to do; live deliveries carry on meanwhile.
func TestRetentionArchivesAndPurgesExactlyPastTheWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		b.seed(t, fmt.Sprintf("old-%d", i), outbox.StatusDelivered, "31 days")
	}
	b.seed(t, "recent-0", outbox.StatusDelivered, "29 days")
	b.seed(t, "recent-1", outbox.StatusDelivered, "29 days")
	b.seed(t, "stuck", outbox.StatusPending, "40 days")
	b.seed(t, "dead", outbox.StatusFailed, "40 days")
	exec(t, b.db, `INSERT INTO kit_outbox_archive SELECT o.*, now() FROM kit_outbox o WHERE aggregate_key IN ('old-0')`)
	exec(t, b.db, `UPDATE kit_outbox_archive SET id = gen_random_uuid(), idempotency_key = 'gone',
		aggregate_key = 'ancient', delivered_at = now() - interval '366 days'`)
	exec(t, b.db, `INSERT INTO kit_outbox_attempts_archive (id, outbox_id, attempt_no, started_at, duration_ms, outcome)
		SELECT 1000000, id, 1, now(), 1, 'delivered' FROM kit_outbox_archive`)
	exec(t, b.db, `INSERT INTO things VALUES (1, now() - interval '91 days'), (2, now() - interval '89 days'),
		(3, now() - interval '200 days')`)
	b.dispatch(t, 40)

	r := b.runner(t)
	var heard []string
	ctx := retention.WithProgress(context.Background(), retention.Progress{
		Start: func(t retention.Task) { heard = append(heard, t.Name+": "+t.About) },
		Batch: func(task string, rows int64) { heard = append(heard, fmt.Sprintf("%s: %d so far", task, rows)) },
	})
	first, err := r.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, retention.Report{Counts: []retention.Count{
		{Task: "kit_outbox", Rows: 5}, {Task: "kit_outbox_archive", Rows: 1}, {Task: "things", Rows: 2},
	}}, first)
	require.Equal(t, []string{
		"kit_outbox: move events of kit_outbox delivered more than 30 days ago, with their attempts, to kit_outbox_archive",
		"kit_outbox: 2 so far", "kit_outbox: 4 so far", "kit_outbox: 5 so far",
		"kit_outbox_archive: delete rows of kit_outbox_archive whose delivered_at is older than 365 days",
		"kit_outbox_archive: 1 so far",
		"things: delete rows of things whose at is older than 90 days",
		"things: 2 so far",
	}, heard, "each task announced, each batch that handled rows reported")
	second, err := r.RunOnce(context.Background())
	require.NoError(t, err)
	for _, c := range second.Counts {
		require.Zero(t, c.Rows, c.Task)
	}

	require.Eventually(t, func() bool {
		return count(t, b.db, `SELECT count(*) FROM kit_outbox WHERE aggregate_key LIKE 'live-%' AND delivery_status = 'delivered'`) == 40
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 5, count(t, b.db, `SELECT count(*) FROM kit_outbox_archive`))
	require.Equal(t, 10, count(t, b.db, `SELECT count(*) FROM kit_outbox_attempts_archive`))
	require.Zero(t, count(t, b.db, `SELECT count(*) FROM kit_outbox WHERE aggregate_key LIKE 'old-%'`))
	require.Zero(t, count(t, b.db, `SELECT count(*) FROM kit_outbox_attempts a JOIN kit_outbox_archive x ON x.id = a.outbox_id`))
	require.Equal(t, 4, count(t, b.db, `SELECT count(*) FROM kit_outbox WHERE aggregate_key IN ('recent-0', 'recent-1', 'stuck', 'dead')`))
	require.Equal(t, 8, count(t, b.db, `SELECT count(*) FROM kit_outbox_attempts a JOIN kit_outbox o ON o.id = a.outbox_id
		WHERE o.aggregate_key IN ('recent-0', 'recent-1', 'stuck', 'dead')`))
	require.Equal(t, []int{2}, ids(t, b.db))
}

func ids(t *testing.T, db bun.IDB) []int {
	t.Helper()
	var out []int
	require.NoError(t, db.NewRaw(`SELECT id FROM things ORDER BY id`).Scan(context.Background(), &out))
	return out
}

// While one replica holds the lock, another's run is skipped, not queued.
func TestOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.runner(t)
	ran, err := pgdb.WithTryAdvisoryLock(context.Background(), b.db, "retention", func(ctx context.Context, _ bun.IDB) error {
		rep, err := r.RunOnce(ctx)
		require.NoError(t, err)
		require.True(t, rep.Skipped)
		require.Empty(t, rep.Counts)
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	rep, err := r.RunOnce(context.Background())
	require.NoError(t, err)
	require.False(t, rep.Skipped, "the lock was released")
}

// A run works only while it holds its lock. When the lock's backend is terminated in
// the middle of a run, the next replica takes the lock and works, and the first run's
// next statement fails: it does no more work and returns an error, so the two never
// work at the same time.
func TestRunStopsWhenItsLockIsLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type result struct {
		rep retention.Report
		err error
	}
	// run starts a runner whose one task inserts the thing with id before and, once
	// resume is closed, the one with id after; working is closed in between.
	run := func(before, after int, working, resume chan struct{}) <-chan result {
		r, err := retention.New(b.db, retention.Config{Tasks: []retention.Task{{Name: "things",
			Run: func(ctx context.Context, db bun.IDB) (int64, error) {
				if _, err := db.NewRaw(`INSERT INTO things VALUES (?, now())`, before).Exec(ctx); err != nil {
					return 0, err
				}
				close(working)
				<-resume
				if _, err := db.NewRaw(`INSERT INTO things VALUES (?, now())`, after).Exec(ctx); err != nil {
					return 1, err
				}
				return 2, nil
			}}}})
		require.NoError(t, err)
		done := make(chan result, 1)
		go func() {
			rep, err := r.RunOnce(ctx)
			done <- result{rep, err}
		}()
		return done
	}

	firstWorking, firstResume := make(chan struct{}), make(chan struct{})
	firstDone := run(1, 2, firstWorking, firstResume)
	await(t, firstWorking)
	var holders []int
	require.NoError(t, b.db.NewRaw(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(ctx, &holders))
	require.Len(t, holders, 1, "one backend holds the retention lock")
	var terminated bool
	require.NoError(t, b.db.NewRaw(`SELECT pg_terminate_backend(?, 10000)`, holders[0]).Scan(ctx, &terminated))
	require.True(t, terminated, "the lock holder's backend has exited")

	secondWorking, secondResume := make(chan struct{}), make(chan struct{})
	secondDone := run(3, 4, secondWorking, secondResume)
	await(t, secondWorking)
	close(firstResume)
	first := await(t, firstDone)
	require.Error(t, first.err, "the first run lost its connection with its lock")
	require.False(t, first.rep.Skipped)
	close(secondResume)
	second := await(t, secondDone)
	require.NoError(t, second.err)
	require.Equal(t, []retention.Count{{Task: "things", Rows: 2}}, second.rep.Counts)
	require.Equal(t, []int{1, 3, 4}, ids(t, b.db), "the first run did nothing after its lock was lost")
}

// observed passes the first observed run on to a channel and drops the others.
type observed chan error

func (o observed) Ran(_ context.Context, _ retention.Report, err error) {
	select {
	case o <- err:
	default:
	}
}

// A scheduled run tells its observer what came of it, a failing task included.
func TestScheduledRunsAreObserved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runs := make(observed, 1)
	r, err := retention.New(b.db, retention.Config{Schedule: "@every 1s", Observer: runs,
		Tasks: []retention.Task{{Name: "broken", Run: func(context.Context, bun.IDB) (int64, error) {
			return 0, errors.New("disk full")
		}}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	err = await(t, runs)
	cancel()
	require.NoError(t, await(t, done))
	require.ErrorContains(t, err, "retention broken: disk full")
}

// await receives from ch (a close counts), failing the test after ten seconds.
func await[T any](t *testing.T, ch <-chan T) (v T) {
	t.Helper()
	select {
	case v = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a run")
	}
	return v
}

func TestSpecsAreValidated(t *testing.T) {
	t.Parallel()
	_, err := retention.Purge(retention.PurgeSpec{Table: "x; DROP TABLE y", Key: "id", Time: "at", OlderThan: time.Hour})
	require.ErrorContains(t, err, "identifier")
	_, err = retention.Purge(retention.PurgeSpec{Table: "x", Key: "id", Time: "at"})
	require.ErrorContains(t, err, "OlderThan")
	_, err = retention.ArchiveOutbox(retention.ArchiveSpec{Outbox: "o"})
	require.ErrorContains(t, err, "OlderThan")
	_, err = retention.New(nil, retention.Config{Schedule: "every tuesday"})
	require.ErrorContains(t, err, "Schedule")
}
