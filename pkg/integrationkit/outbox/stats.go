package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Stats is the state of the outbox at the database's Now.
type Stats struct {
	Pending int64
	// InFlight counts the pending events a dispatcher is sending right now.
	InFlight int64
	// Due counts the pending events whose next attempt time has come and that no
	// dispatcher holds: the ones not waiting out a backoff. An event among them still
	// waits while an earlier event of its aggregate is pending or failed.
	Due       int64
	Delivered int64
	Failed    int64
	// Skipped counts the dead letters operators gave up.
	Skipped int64
	// OldestPendingAge is how long the oldest pending event has waited; 0 when none.
	OldestPendingAge time.Duration
	Now              time.Time
}

// Stats counts the events by status and measures the oldest pending one's age, by the
// database's clock, in one snapshot. Depth reads the undelivered rows; counting the
// delivered ones costs what retention keeps of them (an index-only scan where the
// table has a partial index on delivered rows, as finance_outbox does), the skipped
// ones an index-only scan of their partial index.
func (s *Store) Stats(ctx context.Context, db bun.IDB) (Stats, error) {
	var st Stats
	err := db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		func(ctx context.Context, tx bun.Tx) error {
			d, err := s.Depth(ctx, tx)
			if err != nil {
				return err
			}
			st.Pending, st.Failed = d.Pending, d.Failed
			if d.Oldest != nil {
				st.OldestPendingAge = d.Oldest.Age
			}
			err = tx.NewRaw(`SELECT
					(SELECT count(*) FROM ? WHERE delivery_status = 'pending' AND lease_expires_at > now()),
					(SELECT count(*) FROM ? WHERE delivery_status = 'pending' AND next_attempt_at <= now()
						AND (lease_expires_at IS NULL OR lease_expires_at <= now())),
					(SELECT count(*) FROM ? WHERE delivery_status = 'delivered'),
					(SELECT count(*) FROM ? WHERE delivery_status = 'skipped'),
					now()`, bun.Ident(s.table), bun.Ident(s.table), bun.Ident(s.table), bun.Ident(s.table)).
				Scan(ctx, &st.InFlight, &st.Due, &st.Delivered, &st.Skipped, &st.Now)
			if err != nil {
				return fmt.Errorf("outbox: stats: %w", err)
			}
			return nil
		})
	return st, err
}
