package main

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// staleTables lists what autovacuum would do now to each table that needs it, by
// autovacuum's rules with the server's settings (the defaults in brackets; tables'
// own autovacuum storage parameters are not read: no table measured sets any):
//   - vacuum it when it holds more dead rows than autovacuum_vacuum_threshold plus
//     autovacuum_vacuum_scale_factor of its rows (50 + 20 %), or has had more rows
//     inserted since its last vacuum than autovacuum_vacuum_insert_threshold plus
//     autovacuum_vacuum_insert_scale_factor of its rows (1,000 + 20 %; a threshold
//     of -1 turns this rule off);
//   - analyze it when more rows changed since its last analyze than
//     autovacuum_analyze_threshold plus autovacuum_analyze_scale_factor of its rows
//     (50 + 10 %).
const staleTables = `
SELECT name, to_vacuum, to_analyze FROM (
	SELECT format('%I.%I', s.schemaname, s.relname) AS name,
		s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
			+ current_setting('autovacuum_vacuum_scale_factor')::float8 * r.tuples
		OR current_setting('autovacuum_vacuum_insert_threshold')::float8 >= 0
			AND s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
				+ current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * r.tuples AS to_vacuum,
		s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
			+ current_setting('autovacuum_analyze_scale_factor')::float8 * r.tuples AS to_analyze
	FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid,
		LATERAL (SELECT greatest(c.reltuples, 0) AS tuples) r
) t WHERE to_vacuum OR to_analyze`

// autovacuumPace gives a session autovacuum's cost-based delay, so its VACUUM and
// ANALYZE pause as an autovacuum worker's do: autovacuum_vacuum_cost_delay after
// every autovacuum_vacuum_cost_limit units of work (either -1: the vacuum_ setting's).
const autovacuumPace = `SELECT
	set_config('vacuum_cost_delay', CASE WHEN current_setting('autovacuum_vacuum_cost_delay') LIKE '-1%'
		THEN current_setting('vacuum_cost_delay') ELSE current_setting('autovacuum_vacuum_cost_delay') END, false),
	set_config('vacuum_cost_limit', CASE WHEN current_setting('autovacuum_vacuum_cost_limit')::int > 0
		THEN current_setting('autovacuum_vacuum_cost_limit') ELSE current_setting('vacuum_cost_limit') END, false)`

// autovacuumEvery stands in for autovacuum on a server that runs with it off, where
// the planner would never learn that the outbox holds a backlog and no dead row would
// ever be reclaimed. Every interval it looks at each database of urls, on a
// connection of its own paced as an autovacuum worker, and vacuums and analyzes the
// tables autovacuum would (staleTables), until stop, which cancels a statement in
// progress on the server. A table is processed as often as its changes call for, so a
// large history costs what autovacuum would make it cost. The River baseline's
// databases get the same as the services', and each seeded drain, handoff's or
// River's, starts a stand-in of its own (nothing else's runs beside it), so that
// every drain compared meets the stand-in at the same moments of its own.
func autovacuumEvery(ctx context.Context, every time.Duration, urls ...string) (stop func(), err error) {
	var pools []*pgxpool.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	for _, u := range urls {
		p, err := openPaced(ctx, u)
		if err != nil {
			closeAll()
			return nil, err
		}
		pools = append(pools, p)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for _, db := range pools {
					vacuumStale(ctx, db)
				}
			}
		}
	}()
	return func() { cancel(); <-done; closeAll() }, nil
}

// openPaced opens one connection to dbURL that vacuums at autovacuum's pace.
func openPaced(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	return openPool(ctx, dbURL, 1, func(cfg *pgxpool.Config) {
		// A cancelled context cancels the statement on the server: a paced VACUUM
		// would otherwise run on after stop, into the next drain.
		cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
		}
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, autovacuumPace)
			return err
		}
	})
}

// vacuumStale vacuums and analyzes db's tables as autovacuum would now; a failure
// leaves them for the next look.
func vacuumStale(ctx context.Context, db *pgxpool.Pool) {
	type job struct {
		table           string
		vacuum, analyze bool
	}
	rows, err := db.Query(ctx, staleTables)
	if err != nil {
		return
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.table, &j.vacuum, &j.analyze)
	})
	if err != nil {
		return
	}
	for _, j := range jobs {
		stmt := "ANALYZE "
		switch {
		case j.vacuum && j.analyze:
			stmt = "VACUUM (ANALYZE) "
		case j.vacuum:
			stmt = "VACUUM "
		}
		_, _ = db.Exec(ctx, stmt+j.table)
	}
}

// vacuumWritten vacuums and analyzes every table of db whose heap has pages (it has
// held rows since it was created or last truncated), and leaves the others as a fresh
// database's are: never analyzed. Statistics taken of an empty table would tell the
// planner it stays empty, and the plans a service's connections cache in their first
// statements (a sequential scan is the cheapest read of nothing) would then read the
// whole table at every statement until the next ANALYZE; a table never analyzed is
// planned for an unknown size, through its indexes.
func vacuumWritten(ctx context.Context, db *pgxpool.Pool) error {
	var tables []string
	rows, err := db.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND c.relpersistence <> 't'
		  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
		  AND pg_relation_size(c.oid) > 0
		ORDER BY 1`)
	if err == nil {
		tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(tables) == 0 {
		return err
	}
	_, err = db.Exec(ctx, `VACUUM (ANALYZE) `+strings.Join(tables, ", "))
	return err
}
