package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Depth is what waits in the outbox: how many events are pending and failed, and the
// oldest pending one. Delivered and skipped events are history, not depth, and are not
// counted (their number grows without bound and would make the query cost grow with it).
type Depth struct {
	Pending int64
	Failed  int64
	// Oldest is the oldest pending event, nil when none is pending.
	Oldest *PendingEvent
}

// PendingEvent describes the oldest pending event.
type PendingEvent struct {
	ID           uuid.UUID
	AggregateKey string
	LastError    string
	// Age is how long ago it was written, by the database's clock.
	Age time.Duration
}

// Depth reads the outbox's depth. Its cost follows the backlog, not the history:
// both queries touch only undelivered rows (the partial indexes of the outbox).
func (s *Store) Depth(ctx context.Context, db bun.IDB) (Depth, error) {
	var counts []struct {
		Status string `bun:"delivery_status"`
		N      int64  `bun:"n"`
	}
	err := db.NewRaw(`SELECT delivery_status, count(*) AS n FROM ?
		WHERE delivery_status IN ('pending', 'failed') GROUP BY delivery_status`, bun.Ident(s.table)).Scan(ctx, &counts)
	if err != nil {
		return Depth{}, fmt.Errorf("outbox: depth: %w", err)
	}
	var d Depth
	for _, c := range counts {
		switch c.Status {
		case StatusPending:
			d.Pending = c.N
		case StatusFailed:
			d.Failed = c.N
		}
	}
	if d.Pending == 0 {
		return d, nil
	}
	var head struct {
		ID        uuid.UUID `bun:"id"`
		Aggregate string    `bun:"aggregate_key"`
		LastError string    `bun:"last_error"`
		AgeSecs   float64   `bun:"age_secs"`
	}
	err = db.NewRaw(`SELECT id, aggregate_key, coalesce(last_error, '') AS last_error,
			EXTRACT(EPOCH FROM now() - created_at)::float8 AS age_secs
		FROM ? WHERE delivery_status = 'pending' ORDER BY created_at LIMIT 1`, bun.Ident(s.table)).Scan(ctx, &head)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return d, nil // delivered in between
	case err != nil:
		return Depth{}, fmt.Errorf("outbox: oldest pending: %w", err)
	}
	d.Oldest = &PendingEvent{ID: head.ID, AggregateKey: head.Aggregate, LastError: head.LastError,
		Age: time.Duration(head.AgeSecs * float64(time.Second))}
	return d, nil
}
