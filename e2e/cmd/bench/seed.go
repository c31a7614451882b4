package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"handoff/e2e/cmd/bench/seed"
)

// sqlSeed writes $1 invoices' events (seed.Events) straight into finance_outbox, to
// destination $3, in status $2: delivered rows get delivered_at and lie a day in the
// past. next_attempt_at is created_at, so the rows queue in the order a stream of
// clerks would have made them.
const sqlSeed = `
INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
	aggregate_seq, delivery_status, delivery_attempts, request_count, created_at, next_attempt_at, delivered_at)
SELECT s.id, s.event_type, s.payload, s.idempotency_key, $3, s.aggregate_key, s.aggregate_seq, $2,
	CASE WHEN $2 = 'delivered' THEN 1 ELSE 0 END, CASE WHEN $2 = 'delivered' THEN 1 ELSE 0 END,
	s.created_at, s.created_at, CASE WHEN $2 = 'delivered' THEN s.created_at + interval '50 milliseconds' END
FROM (` + seed.Events + `) AS s
ORDER BY s.n, s.aggregate_seq`

// seedEvents writes events (rounded up to whole invoices, two events each) to
// destination in one transaction, which also notifies the dispatchers. It returns how
// many rows it wrote and the database's clock just before the commit: no dispatcher
// can have seen them earlier.
func seedEvents(ctx context.Context, db *pgxpool.Pool, events int, destination, status string) (int64, time.Time, error) {
	var released time.Time
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, released, fmt.Errorf("seed: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, sqlSeed, seed.Invoices(events), status, destination)
	if err != nil {
		return 0, released, fmt.Errorf("seed %d %s events: %w", events, status, err)
	}
	err = tx.QueryRow(ctx, `SELECT clock_timestamp() FROM pg_notify('finance_outbox', '')`).Scan(&released)
	if err != nil {
		return 0, released, fmt.Errorf("seed: notify: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, released, fmt.Errorf("seed: commit: %w", err)
	}
	return tag.RowsAffected(), released, nil
}

// vacuumAnalyze leaves the outbox as autovacuum would after a quiet spell: dead rows
// gone, visibility map set, planner statistics fresh.
func vacuumAnalyze(ctx context.Context, db *pgxpool.Pool) error {
	if _, err := db.Exec(ctx, `VACUUM (ANALYZE) finance_outbox`); err != nil {
		return fmt.Errorf("vacuum analyze finance_outbox: %w", err)
	}
	return nil
}
