package outbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// A burst that arrives after the outbox was analyzed while nothing was pending (the
// statistics then say the burst is one row), and after an outage's deferrals bloated
// the due index, is still claimed through the due index in its order: the claim
// neither reads the index of pending events by creation time nor sorts the backlog.
func TestClaimWalksTheDueIndexWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.SetMaxOpenConns(1) // one backend: its statistics are flushed on request
	exec := func(sql string) {
		t.Helper()
		_, err := b.db.ExecContext(b.ctx, sql)
		require.NoError(t, err)
	}
	insert := func(prefix string, n int) {
		exec(`INSERT INTO kit_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key, aggregate_seq)
			SELECT gen_random_uuid(), 'invoice.paid', '{}', '` + prefix + `' || g, 'http://x', '` + prefix + `' || g / 2, g % 2 + 1
			FROM generate_series(1, ` + fmt.Sprint(n) + `) AS g`)
	}
	exec(`ALTER TABLE kit_outbox SET (autovacuum_enabled = false)`) // the statistics stay stale
	insert("history", 20000)
	exec(`UPDATE kit_outbox SET next_attempt_at = now() + random() * interval '1 minute'`) // deferrals
	exec(`UPDATE kit_outbox SET next_attempt_at = now() + random() * interval '1 minute'`)
	exec(`UPDATE kit_outbox SET delivery_status = 'delivered', delivered_at = now()`)
	exec(`VACUUM ANALYZE kit_outbox`)
	insert("burst", 4000)

	scans := func() (due, byCreation int64) {
		t.Helper()
		exec(`SELECT pg_stat_force_next_flush()`)
		require.NoError(t, b.db.QueryRowContext(b.ctx, `SELECT
			sum(idx_scan) FILTER (WHERE indexrelname = 'kit_outbox_due_idx'),
			sum(idx_scan) FILTER (WHERE indexrelname = 'kit_outbox_pending_created_idx')
			FROM pg_stat_user_indexes WHERE relname = 'kit_outbox'`).Scan(&due, &byCreation))
		return due, byCreation
	}
	// claimed claims through the handle begin returns (a transaction or the database)
	// and checks which indexes the claim read.
	claimed := func(begin func() bun.IDB) {
		t.Helper()
		due0, created0 := scans()
		db := begin()
		recs, err := b.store.Claim(b.ctx, db, "test", 50, time.Minute)
		require.NoError(t, err)
		require.Len(t, recs, 50)
		var sorts string
		require.NoError(t, db.QueryRowContext(b.ctx, `SELECT current_setting('enable_sort')`).Scan(&sorts))
		require.Equal(t, "on", sorts, "the claim's setting outlived it")
		if tx, ok := db.(bun.Tx); ok {
			require.NoError(t, tx.Rollback())
		}
		due1, created1 := scans()
		require.Equal(t, created0, created1, "the claim read the index by creation time")
		require.Greater(t, due1, due0, "the claim did not read the due index")
	}
	claimed(func() bun.IDB { return b.db })
	// In the caller's transaction too, where the claim restores the setting it found.
	claimed(func() bun.IDB {
		tx, err := b.db.BeginTx(b.ctx, nil)
		require.NoError(t, err)
		return tx
	})
}

// A change of the outbox that makes the claim's prepared plan stale fails one claim
// on that connection; the claim is prepared anew by the next, which claims.
func TestClaimRecoversFromAChangeOfItsTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.SetMaxOpenConns(1) // one backend, holding the claim's prepared statement
	b.enqueue(t, "agg-1", 1, "invoice.paid")
	b.enqueue(t, "agg-2", 1, "invoice.paid")
	recs, err := b.store.Claim(b.ctx, b.db, "test", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	b.exec(t, `ALTER TABLE kit_outbox ALTER COLUMN correlation_id TYPE varchar(200)`)

	_, err = b.store.Claim(b.ctx, b.db, "test", 10, time.Minute)
	require.Equal(t, "0A000", pgdb.Code(err), "the claim's plan went stale: %v", err)
	recs, err = b.store.Claim(b.ctx, b.db, "test", 10, time.Minute)
	require.NoError(t, err, "the claim was prepared anew")
	require.Len(t, recs, 1)
}

// The settlement's one plan is made at the connection's first settlement, here while
// the statistics say the outbox is empty; after the outbox has grown to 20,000 rows
// (and was never analyzed again) settlements of one event and of forty, on the
// database and in a caller's transaction, still read only the rows they settle, and
// their settings end with them.
func TestSettlementReadsOnlyItsRowsWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.SetMaxOpenConns(1) // one backend: its statistics are flushed on request
	// The statistics stay as they are: empty.
	b.exec(t, `ALTER TABLE kit_outbox SET (autovacuum_enabled = false)`)
	b.exec(t, `ANALYZE kit_outbox`)
	reads := func() (rows int64) {
		t.Helper()
		b.exec(t, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, b.db.QueryRowContext(b.ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
			FROM pg_stat_user_tables WHERE relname = 'kit_outbox'`).Scan(&rows))
		return rows
	}
	// settled claims n events and settles them through the handle begin returns (a
	// transaction or the database), and checks how many outbox rows the settlement read.
	round := 0
	settled := func(n int, begin func() bun.IDB) {
		t.Helper()
		round++
		for i := range n {
			b.enqueue(t, fmt.Sprintf("late-%d-%d", round, i), 1, "invoice.paid")
		}
		recs, err := b.store.Claim(b.ctx, b.db, "test", n, time.Minute)
		require.NoError(t, err)
		require.Len(t, recs, n)
		items := make([]outbox.Settlement, n)
		for i, r := range recs {
			items[i] = outbox.Settlement{Record: r, Outcome: sent(outbox.StatusDelivered, 200, "delivered")}
		}
		before := reads()
		db := begin()
		got, err := b.store.SettleMany(b.ctx, db, items)
		require.NoError(t, err)
		require.Len(t, got, n)
		var seqscan, mode string
		require.NoError(t, db.QueryRowContext(b.ctx, `SELECT current_setting('enable_seqscan'),
			current_setting('plan_cache_mode')`).Scan(&seqscan, &mode))
		require.Equal(t, []string{"on", "auto"}, []string{seqscan, mode}, "the settlement's settings outlived it")
		if tx, ok := db.(bun.Tx); ok {
			require.NoError(t, tx.Commit())
		}
		// Each settled row is read once by the update and once by its attempt's
		// foreign-key check; a plan reading the table whole reads 20,000.
		require.LessOrEqual(t, reads()-before, int64(2*n+2), "the settlement of %d read the outbox whole", n)
	}
	onDB := func() bun.IDB { return b.db }
	inTx := func() bun.IDB {
		tx, err := b.db.BeginTx(b.ctx, nil)
		require.NoError(t, err)
		return tx
	}
	// The plans are made on empty statistics: the database's (a statement prepared
	// for the batch beside the settings) and the transaction's (pgx's statement cache).
	settled(1, onDB)
	settled(1, inTx)
	b.exec(t, `INSERT INTO kit_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key, aggregate_seq,
			delivery_status, delivered_at)
		SELECT gen_random_uuid(), 'invoice.paid', '{}', 'history' || g, 'http://x', 'history' || g, 1, 'delivered', now()
		FROM generate_series(1, 20000) AS g`)
	settled(1, onDB)
	settled(40, onDB)
	settled(1, inTx)
	settled(40, inTx)
}
