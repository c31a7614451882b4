package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgtest"
)

// The stand-in analyzer takes autovacuum's rule: a table with more rows changed since
// its last analyze than 50 + 10 % of its rows is analyzed, one with fewer is not.
func TestAnalyzeStaleTakesAutovacuumsRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := openPool(ctx, pgtest.NewEmptyURL(t, "analyze"), 1)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	exec := func(sql string) {
		_, err := db.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(`CREATE TABLE changed (n int)`)
	exec(`CREATE TABLE settled (n int)`)
	exec(`INSERT INTO changed SELECT generate_series(1, 1000)`)
	exec(`INSERT INTO settled SELECT generate_series(1, 1000)`)
	exec(`SELECT pg_stat_force_next_flush()`) // the inserts counted before the ANALYZE
	exec(`ANALYZE settled`)
	// 50 + 10 % of 1,000 rows is 150: 100 changes leave settled as it is.
	exec(`UPDATE settled SET n = n WHERE n <= 100`)
	exec(`SELECT pg_stat_force_next_flush()`)

	analyzeStale(ctx, db)

	analyzed := func(table string) int64 {
		var n int64
		require.NoError(t, db.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&n))
		return n
	}
	require.EqualValues(t, 1, analyzed("changed"), "1,000 rows changed and never analyzed")
	require.EqualValues(t, 1, analyzed("settled"), "only its own ANALYZE: 100 changes are under the threshold")
}
