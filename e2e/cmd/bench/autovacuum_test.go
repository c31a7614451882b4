package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgtest"
)

// The autovacuum stand-in takes autovacuum's rules: a table with more dead rows than
// 50 + 20 % of its rows, or more rows inserted since its last vacuum than 1,000 + 20 %,
// is vacuumed, one with more rows changed since its last analyze than 50 + 10 % is
// analyzed, one under every threshold is left alone; and it works at autovacuum's
// pace.
func TestVacuumStaleTakesAutovacuumsRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := openPaced(ctx, pgtest.NewEmptyURL(t, "autovacuum"))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	exec := func(sql string) {
		_, err := db.Exec(ctx, sql)
		require.NoError(t, err)
	}
	var delay, want string
	require.NoError(t, db.QueryRow(ctx, `SELECT current_setting('vacuum_cost_delay'),
		current_setting('autovacuum_vacuum_cost_delay')`).Scan(&delay, &want))
	require.Equal(t, want, delay, "the stand-in's session is paced as autovacuum")

	// The server's own autovacuum, if on, must not touch the tables.
	table := func(name string, rows int) {
		exec(`CREATE TABLE ` + name + ` (n int) WITH (autovacuum_enabled = off)`)
		exec(`INSERT INTO ` + name + ` SELECT generate_series(1, ` + strconv.Itoa(rows) + `)`)
	}
	table("changed", 2000)
	for _, name := range []string{"settled", "churned", "restless", "aborted"} {
		table(name, 1000)
	}
	exec(`SELECT pg_stat_force_next_flush()`) // the inserts counted before the VACUUM
	exec(`VACUUM (ANALYZE) settled, churned, restless, aborted`)
	exec(`UPDATE settled SET n = n WHERE n <= 100`)  // 100: under 50 + 10 % and 50 + 20 % of 1,000
	exec(`UPDATE churned SET n = n WHERE n <= 400`)  // 400: past both
	exec(`UPDATE restless SET n = n WHERE n <= 200`) // 200: past 150 changed, under 250 dead
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO aborted SELECT generate_series(1, 300)`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx)) // 300 dead rows, nothing changed
	exec(`SELECT pg_stat_force_next_flush()`)

	vacuumStale(ctx, db)

	counts := func(table string) [2]int64 {
		var c [2]int64
		require.NoError(t, db.QueryRow(ctx, `SELECT vacuum_count, analyze_count FROM pg_stat_user_tables
			WHERE relname = $1`, table).Scan(&c[0], &c[1]))
		return c
	}
	require.Equal(t, [2]int64{1, 1}, counts("changed"), "2,000 rows inserted (past 1,000 + 20 % of none) and never analyzed")
	require.Equal(t, [2]int64{1, 1}, counts("settled"), "only its own VACUUM (ANALYZE): 100 changes are under both thresholds")
	require.Equal(t, [2]int64{2, 2}, counts("churned"), "400 dead rows and 400 changed")
	require.Equal(t, [2]int64{1, 2}, counts("restless"), "analyzed only: 200 changed, 200 dead")
	require.Equal(t, [2]int64{2, 1}, counts("aborted"), "vacuumed only: 300 dead rows of an aborted insert")
}

// Before a drain, a table that has held a row is vacuumed and analyzed; one never
// written stays never analyzed, so the services' first statements are not planned
// for a table that stays empty.
func TestVacuumWrittenLeavesNeverWrittenTablesUnanalyzed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyPool(t, "vacuumwritten")
	for _, sql := range []string{
		`CREATE TABLE written (n int) WITH (autovacuum_enabled = off)`,
		`CREATE TABLE emptied (n int) WITH (autovacuum_enabled = off)`,
		`CREATE TABLE "never written" (n int) WITH (autovacuum_enabled = off)`,
		`INSERT INTO written SELECT generate_series(1, 100)`,
		`INSERT INTO emptied SELECT generate_series(1, 100)`,
		`DELETE FROM emptied`,
	} {
		_, err := db.Exec(ctx, sql)
		require.NoError(t, err)
	}

	require.NoError(t, vacuumWritten(ctx, db))

	reltuples := func(table string) float64 {
		var n float64
		require.NoError(t, db.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`,
			pgx.Identifier{table}.Sanitize()).Scan(&n))
		return n
	}
	require.Equal(t, 100.0, reltuples("written"))
	require.Equal(t, 0.0, reltuples("emptied"), "analyzed: the planner knows it is empty")
	var size int64
	require.NoError(t, db.QueryRow(ctx, `SELECT pg_relation_size('emptied')`).Scan(&size))
	require.Zero(t, size, "vacuumed: its dead rows are gone and its empty pages truncated")
	require.Equal(t, -1.0, reltuples("never written"), "never analyzed, as a fresh database's table")
}
