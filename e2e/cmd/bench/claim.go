package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/uptrace/bun"

	"handoff/migrations"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// Claim is the claim statement's latency as the outbox grows: the dispatcher's
// outbox.Store.Claim of one batch, on a table holding nothing, only a backlog, and
// the backlog under a long delivered history.
type Claim struct {
	Batch   int        `json:"batch"`
	Samples int        `json:"samples"`
	Rows    []ClaimRow `json:"rows"`
}

// ClaimRow is one table state and the claim's latency on it.
type ClaimRow struct {
	Delivered int64 `json:"delivered"`
	Pending   int64 `json:"pending"`
	// Statistics says what the planner knew: "fresh" (VACUUM ANALYZE of this state),
	// "idle" (taken while nothing was pending) or "none" (never analyzed).
	Statistics string `json:"statistics"`
	// Claimed is how many events one claim returned.
	Claimed int  `json:"claimed"`
	Latency Dist `json:"latency"`
}

// claimDest is the destination of the claim table's rows; nothing is ever sent there.
const claimDest = "http://127.0.0.1:9/webhooks/finance"

// claimDB is an outbox that only the benchmark touches.
type claimDB struct {
	db    *bun.DB
	pool  *pgxpool.Pool
	store *outbox.Store
}

func openClaimDB(ctx context.Context, cl *cluster, label string) (*claimDB, error) {
	url, err := cl.create(ctx, label)
	if err != nil {
		return nil, err
	}
	if err := pgdb.Migrate(url, migrations.Finance()); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", label, err)
	}
	c := &claimDB{}
	if c.store, err = outbox.NewStore("finance_outbox"); err != nil {
		return nil, err
	}
	if c.db, err = pgdb.Open(ctx, url, 2); err != nil {
		return nil, err
	}
	if c.pool, err = openPool(ctx, url, 2); err != nil {
		c.db.Close()
		return nil, err
	}
	return c, nil
}

func (c *claimDB) close() {
	c.db.Close()
	c.pool.Close()
}

// sample times the claim on the table as it stands and appends the row to out.
func (c *claimDB) sample(ctx context.Context, p plan, batch int, row ClaimRow, out *Claim) error {
	var err error
	row.Claimed, row.Latency, err = sampleClaims(ctx, c.db, c.store, batch, p.ClaimSamples)
	out.Rows = append(out.Rows, row)
	return err
}

// measureClaim times Claim on an empty outbox; with p.Pending pending rows; with
// p.History delivered rows added; each after VACUUM ANALYZE; then on the same rows
// with statistics taken while nothing was pending (a queue analyzed when idle, then
// hit by a burst); last, p.Pending rows in an outbox never analyzed (autovacuum off).
// Every sample's leases are released after it, so each one claims the same head of
// the queue.
func measureClaim(ctx context.Context, cl *cluster, p plan, batch int) (Claim, error) {
	c := Claim{Batch: batch, Samples: p.ClaimSamples}
	cdb, err := openClaimDB(ctx, cl, "claim")
	if err != nil {
		return c, err
	}
	defer cdb.close()
	row := ClaimRow{Statistics: "fresh"}
	for _, step := range []claimStep{{0, ""}, {p.Pending, outbox.StatusPending}, {p.History, outbox.StatusDelivered}} {
		n, err := step.seed(ctx, cdb.pool)
		if err != nil {
			return c, err
		}
		if step.status == outbox.StatusPending {
			row.Pending += n
		} else {
			row.Delivered += n
		}
		if err := cdb.sample(ctx, p, batch, row, &c); err != nil {
			return c, err
		}
	}
	if err := staleStatistics(ctx, cdb.pool, p.Pending); err != nil {
		return c, err
	}
	row.Statistics = "idle"
	if err := cdb.sample(ctx, p, batch, row, &c); err != nil {
		return c, err
	}
	return c, neverAnalyzed(ctx, cl, p, batch, &c)
}

// neverAnalyzed times the claim on p.Pending rows in an outbox no ANALYZE has seen.
func neverAnalyzed(ctx context.Context, cl *cluster, p plan, batch int, c *Claim) error {
	cdb, err := openClaimDB(ctx, cl, "claim_unanalyzed")
	if err != nil {
		return err
	}
	defer cdb.close()
	n, _, err := seedEvents(ctx, cdb.pool, p.Pending, claimDest, outbox.StatusPending)
	if err != nil {
		return err
	}
	return cdb.sample(ctx, p, batch, ClaimRow{Pending: n, Statistics: "none"}, c)
}

// claimStep adds events in status (none when 0) and vacuums the outbox.
type claimStep struct {
	events int
	status string
}

func (s claimStep) seed(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	if s.events > 0 {
		var err error
		if n, _, err = seedEvents(ctx, pool, s.events, claimDest, s.status); err != nil {
			return 0, err
		}
	}
	return n, vacuumAnalyze(ctx, pool)
}

// staleStatistics deletes the pending events, vacuums and analyzes the outbox as it
// stands (history only), then writes pending events afresh without analyzing: the
// planner believes nothing is pending.
func staleStatistics(ctx context.Context, pool *pgxpool.Pool, pending int) error {
	if _, err := pool.Exec(ctx, `DELETE FROM finance_outbox WHERE delivery_status = 'pending'`); err != nil {
		return fmt.Errorf("stale statistics: %w", err)
	}
	if err := vacuumAnalyze(ctx, pool); err != nil {
		return err
	}
	_, _, err := seedEvents(ctx, pool, pending, claimDest, outbox.StatusPending)
	return err
}

// sampleClaims runs n claims of batch events as the dispatcher makes them, each
// released after it (untimed), and returns how many events the last one claimed and
// the latency of the claim.
func sampleClaims(ctx context.Context, db *bun.DB, store *outbox.Store, batch, n int) (int, Dist, error) {
	lat := make([]time.Duration, 0, n)
	claimed := 0
	for range n {
		start := time.Now()
		recs, err := store.Claim(ctx, db, "bench", batch, 30*time.Second)
		lat = append(lat, time.Since(start))
		if err == nil {
			err = store.Release(ctx, db, recs...)
		}
		if err != nil {
			return 0, Dist{}, fmt.Errorf("claim sample: %w", err)
		}
		claimed = len(recs)
	}
	return claimed, distOf(lat), nil
}
