package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlSeed writes $1 invoices' events straight into finance_outbox: for each invoice an
// invoice.issued (sequence 1) and an invoice.paid (sequence 2) with the data finance
// would give them, to destination $2, in status $3 (delivered rows get delivered_at
// and lie a day in the past). created_at and next_attempt_at step by 10 µs per
// invoice, so the rows queue in the order a stream of clerks would have made them.
// The invoices themselves are not written: only the outbox and logistics read them.
const sqlSeed = `
INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
	aggregate_seq, delivery_status, delivery_attempts, request_count, created_at, next_attempt_at, delivered_at)
SELECT gen_random_uuid(), e.typ,
	jsonb_build_object('invoice_id', i.id, 'invoice_number', 'SEED-' || i.n, 'customer_id', 'bench-seed',
		'currency', 'EUR', 'total_minor', 12000, 'paid_minor', e.paid, 'status', e.status)
	|| CASE WHEN e.seq = 2 THEN jsonb_build_object('payment_id', 'pay-' || i.id, 'amount_minor', 12000)
	        ELSE '{}'::jsonb END,
	e.typ || ':' || i.id || CASE WHEN e.seq = 2 THEN ':pay-' || i.id ELSE '' END,
	$2, i.id::text, e.seq, $3,
	CASE WHEN $3 = 'delivered' THEN 1 ELSE 0 END, CASE WHEN $3 = 'delivered' THEN 1 ELSE 0 END,
	i.at, i.at, CASE WHEN $3 = 'delivered' THEN i.at + interval '50 milliseconds' END
FROM (SELECT gen_random_uuid() AS id, g AS n,
             now() - CASE WHEN $3 = 'delivered' THEN interval '1 day' ELSE interval '0' END
                   - make_interval(secs => ($1 - g) / 100000.0) AS at
      FROM generate_series(1, $1::int) AS g) AS i
CROSS JOIN (VALUES ('invoice.issued', 1, 0, 'issued'), ('invoice.paid', 2, 12000, 'paid'))
	AS e (typ, seq, paid, status)
ORDER BY i.n, e.seq`

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
	tag, err := tx.Exec(ctx, sqlSeed, (events+1)/2, destination, status)
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
