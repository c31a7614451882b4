package delivery_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

// Claim eligibility, lease expiry and the next attempt follow the database's now():
// the dispatcher hands the store durations only, never a time of its own clock, so a
// dispatcher whose clock is off can neither reclaim early nor stall the queue.
func TestClaimsAndLeasesRunOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("claim and settle stamp database time", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.enqueue(t, "agg-1", 1)
		tx, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		recs, err := b.store.Claim(ctx, tx, "replica", 10, 30*time.Second)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		var leaseExact bool
		require.NoError(t, tx.NewRaw(`SELECT lease_expires_at = now() + interval '30 seconds' FROM kit_outbox`).Scan(ctx, &leaseExact))
		require.True(t, leaseExact, "lease expiry is the transaction's now() plus the lease")

		skewed := time.Now().Add(-10 * time.Minute) // the dispatcher's clock, ten minutes slow
		require.NoError(t, b.store.Settle(ctx, tx, recs[0], outbox.Outcome{Status: outbox.StatusPending, Counted: true,
			Sent: true, RetryIn: 90 * time.Second, StartedAt: skewed, Label: "retry"}))
		var nextExact, lastExact bool
		require.NoError(t, tx.NewRaw(`SELECT next_attempt_at = now() + interval '90 seconds', last_attempt_at = now()
			FROM kit_outbox`).Scan(ctx, &nextExact, &lastExact))
		require.True(t, nextExact, "the next attempt is the transaction's now() plus the delay")
		require.True(t, lastExact, "the attempt time is the database's, whatever the dispatcher's clock says")
	})

	t.Run("eligibility follows database time", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.enqueue(t, "agg-1", 1)
		_, err := b.db.ExecContext(ctx, `UPDATE kit_outbox SET next_attempt_at = clock_timestamp() + interval '300 milliseconds'`)
		require.NoError(t, err)
		tx, err := b.db.BeginTx(ctx, nil) // its now() stays at this moment, before the event is due
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		var started time.Time
		require.NoError(t, tx.NewRaw(`SELECT now()`).Scan(ctx, &started))
		var next time.Time
		require.NoError(t, b.db.NewRaw(`SELECT next_attempt_at FROM kit_outbox`).Scan(ctx, &next))
		// A wait for wall-clock time, not for work: nothing happens at the due time
		// for the kit to report, so both clocks are polled past it.
		require.Eventually(t, func() bool {
			var pastDue bool
			err := b.db.NewRaw(`SELECT clock_timestamp() > next_attempt_at FROM kit_outbox`).Scan(ctx, &pastDue)
			return err == nil && pastDue && time.Now().After(next)
		}, 10*time.Second, 10*time.Millisecond, "the wall clocks pass the next attempt")

		recs, err := b.store.Claim(ctx, tx, "inside", 10, time.Minute)
		require.NoError(t, err)
		require.Empty(t, recs, "not due at the transaction's now() (%s < %s)", started, next)
		require.NoError(t, tx.Rollback())
		recs, err = b.store.Claim(ctx, b.db, "outside", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, recs, 1, "due at the next statement's now()")
	})

	t.Run("a dead replica lease is waited out", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.enqueue(t, "agg-1", 1)
		dead, err := b.store.Claim(ctx, b.db, "killed-before-its-post", 10, 2*time.Second)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		var expires time.Time
		require.NoError(t, b.db.NewRaw(`SELECT lease_expires_at FROM kit_outbox`).Scan(ctx, &expires))
		b.start(t, delivery.Config{Interval: 100 * time.Millisecond})

		rows := b.waitSettled(t, 15*time.Second)
		require.Equal(t, outbox.StatusDelivered, rows[0].Status)
		require.Equal(t, 1, rows[0].Requests, "the dead claim never sent; the survivor sent once")
		var afterLease bool
		require.NoError(t, b.db.NewRaw(`SELECT delivered_at >= ?::timestamptz FROM kit_outbox`, expires).Scan(ctx, &afterLease))
		require.True(t, afterLease, "not reclaimed before the database said the lease was over")
	})
}

// A long REPEATABLE READ transaction (a report, a pg_dump) holds back the vacuum
// horizon while events flow: claims and settlements keep working, though nothing they
// leave behind can be vacuumed; once it ends, vacuum reclaims it all and delivery
// carries on.
func TestClaimsSucceedWhileASnapshotHoldsTheHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	holder, err := b.db.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Close() }()
	snapshot, err := holder.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	require.NoError(t, err)
	defer func() { _ = snapshot.Rollback() }()
	var pid, seen int
	require.NoError(t, snapshot.NewRaw(`SELECT pg_backend_pid(), (SELECT count(*) FROM kit_outbox)`).Scan(ctx, &pid, &seen))

	b.start(t, delivery.Config{Concurrency: 8})
	const events = 200
	for i := range events {
		b.enqueue(t, fmt.Sprintf("agg-%03d", i), 1)
	}
	rows := b.waitSettled(t, 60*time.Second)
	require.Len(t, rows, events)
	var held bool
	require.NoError(t, b.db.NewRaw(`SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = ?`, pid).Scan(ctx, &held))
	require.True(t, held, "the snapshot held the horizon throughout")
	require.Positive(t, vacuumedDeadTuples(t, b), "vacuum cannot remove what the snapshot may still see")

	require.NoError(t, snapshot.Rollback())
	require.Zero(t, vacuumedDeadTuples(t, b), "released, vacuum reclaims everything")
	b.enqueue(t, "after", 1)
	for _, r := range b.waitSettled(t, 10*time.Second) {
		require.Equal(t, outbox.StatusDelivered, r.Status)
	}
}

// vacuumedDeadTuples vacuums the outbox and returns the dead row versions it had to
// leave.
func vacuumedDeadTuples(t *testing.T, b *bundle) int64 {
	t.Helper()
	ctx := context.Background()
	_, err := b.db.ExecContext(ctx, `VACUUM kit_outbox`)
	require.NoError(t, err)
	var dead int64
	require.NoError(t, b.db.NewRaw(`SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'kit_outbox'`).Scan(ctx, &dead))
	return dead
}

// No transaction is held open while a request is on the wire: with the receiver
// holding every request, no session of the dispatcher's database is idle in a
// transaction, in single and in batch mode, with the circuit breaker consulted before
// each send. (The loop's own short statements may run meanwhile, each in its own
// implicit transaction.)
func TestNoTransactionIsOpenDuringThePost(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode string) {
		ctx := context.Background()
		b := newBundle(t)
		arrived := make(chan struct{}, 16)
		release := make(chan struct{})
		var once sync.Once
		b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			acceptAll(w, r, body)
		}))
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		for i := range 3 {
			b.enqueue(t, fmt.Sprintf("agg-%d", i), 1)
		}
		b.runWith(t, delivery.Config{Mode: mode}, delivery.Deps{Breaker: b.newBreaker(t, breaker.Config{})})

		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("no request arrived")
		}
		for range 50 {
			// Every session of this test's database but this one is the dispatcher's
			// (how many it holds at an instant depends on its pool and the server's
			// load, so only the idle transactions are counted).
			var idleInTx int
			require.NoError(t, b.db.NewRaw(`SELECT count(*) FILTER (WHERE state LIKE 'idle in transaction%')
				FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
				AND pid <> pg_backend_pid()`).Scan(ctx, &idleInTx))
			require.Zero(t, idleInTx, "no transaction is held open while the request waits")
		}
		once.Do(func() { close(release) })
		for _, r := range b.waitSettled(t, 10*time.Second) {
			require.Equal(t, outbox.StatusDelivered, r.Status)
		}
	})
}

// NOTIFY is only a wake-up: it carries no payload, so an event of any size (here
// 100 KB, past NOTIFY's 8000-byte limit) is announced the same; and with the
// dispatcher's LISTEN connection terminated, a new event is still delivered.
func TestNotifyIsOnlyAWakeUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	big := strings.Repeat("p", 100_000)
	enqueueBig := func(agg string) {
		_, err := b.store.Enqueue(ctx, b.db, outbox.Event{Type: "thing.happened", AggregateKey: agg, Sequence: 1,
			IdempotencyKey: "big:" + agg, Destination: b.url, Payload: map[string]string{"big": big}})
		require.NoError(t, err)
	}

	listener, err := pgx.Connect(ctx, b.dbURL)
	require.NoError(t, err)
	_, err = listener.Exec(ctx, `LISTEN `+pgx.Identifier{b.store.Channel()}.Sanitize())
	require.NoError(t, err)
	enqueueBig("first")
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(waitCtx)
	require.NoError(t, err)
	require.Empty(t, n.Payload, "the notice names nothing; the claim finds the event")
	require.NoError(t, listener.Close(ctx))

	b.start(t, delivery.Config{Interval: 500 * time.Millisecond})
	b.waitSettled(t, 10*time.Second)
	var terminated bool
	// The dispatcher reports no LISTEN: the session is polled for until it is there
	// to be killed (it may still be connecting when the first event is settled).
	require.Eventually(t, func() bool {
		err := b.db.NewRaw(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`).Scan(ctx, &terminated)
		return err == nil && terminated
	}, 10*time.Second, 10*time.Millisecond, "the dispatcher's LISTEN connection is killed")
	enqueueBig("second")
	rows := b.waitSettled(t, 10*time.Second)
	require.Len(t, rows, 2)
	for _, r := range rows {
		require.Equal(t, outbox.StatusDelivered, r.Status)
	}
}
