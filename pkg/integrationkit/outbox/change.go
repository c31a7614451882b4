package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// EventRef names an event an operator's change touched.
type EventRef struct {
	ID           uuid.UUID `bun:"id"`
	AggregateKey string    `bun:"aggregate_key"`
}

// BulkResult says what a change by filter did, or with a count (a dry run) would do.
type BulkResult struct {
	// Count is how many events were changed; of a count, how many would be.
	Count int
	// More is true when further events match: the limit stopped the change early.
	More bool
	// Changed names the events changed, oldest first; a count changes none.
	Changed []EventRef
}

// state is what a single change checks before it writes.
type state struct {
	Status   string `bun:"delivery_status"`
	InFlight bool   `bun:"in_flight"`
}

// changeOne locks event id, lets allow refuse the change by its current state, then
// applies set (an UPDATE's SET list) and notifies dispatchers, all in db's
// transaction. It returns the event as changed, or ErrNotFound or allow's error.
func (s *Store) changeOne(ctx context.Context, db bun.IDB, id uuid.UUID, allow func(state) error, set string) (StoredEvent, error) {
	var out StoredEvent
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var cur state
		err := tx.NewRaw(`SELECT delivery_status, coalesce(lease_expires_at > now(), false) AS in_flight
			FROM ? WHERE id = ? FOR UPDATE`, bun.Ident(s.table), id).Scan(ctx, &cur)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		case err != nil:
			return fmt.Errorf("outbox: event %s: %w", id, err)
		}
		if err := allow(cur); err != nil {
			return fmt.Errorf("%w: %s", err, id)
		}
		err = tx.NewRaw(`UPDATE ? SET `+set+` WHERE id = ? RETURNING `+eventColumns,
			bun.Ident(s.table), id).Scan(ctx, &out)
		if err != nil {
			return fmt.Errorf("outbox: change %s: %w", id, err)
		}
		return s.Notify(ctx, tx)
	})
	return out, err
}

// changeMatching applies set to up to f.Limit events of selected(f), oldest first, in
// one statement, and notifies dispatchers when it changed any. Rows locked by a
// concurrent writer are skipped, not waited for. An event set changed must no longer
// be selected, so the same selection afterwards says whether more remain.
func (s *Store) changeMatching(ctx context.Context, db bun.IDB, f Filter, selected func(bun.IDB, Filter) *bun.SelectQuery, set string) (BulkResult, error) {
	var res BulkResult
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		picked := selected(tx, f).Column("id").OrderExpr("created_at, id").
			Limit(int64(f.Limit)).For("UPDATE SKIP LOCKED")
		err := tx.NewRaw(`WITH picked AS (?), changed AS (
				UPDATE ? AS o SET `+set+` FROM picked WHERE o.id = picked.id
				RETURNING o.id, o.aggregate_key, o.created_at
			) SELECT id, aggregate_key FROM changed ORDER BY created_at, id`,
			picked, bun.Ident(s.table)).Scan(ctx, &res.Changed)
		if err != nil {
			return fmt.Errorf("outbox: change matching: %w", err)
		}
		res.Count = len(res.Changed)
		if res.More, err = selected(tx, f).Exists(ctx); err != nil {
			return fmt.Errorf("outbox: change matching: %w", err)
		}
		if res.Count == 0 {
			return nil
		}
		return s.Notify(ctx, tx)
	})
	return res, err
}

// countMatching is changeMatching's dry run: how many events it would change now and
// whether more would remain. Nothing is locked or written.
func (s *Store) countMatching(ctx context.Context, db bun.IDB, f Filter, selected func(bun.IDB, Filter) *bun.SelectQuery) (BulkResult, error) {
	var n int
	q := selected(db, f).Column("id").Limit(int64(f.Limit) + 1)
	if err := db.NewSelect().TableExpr("(?) AS m", q).ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
		return BulkResult{}, fmt.Errorf("outbox: count matching: %w", err)
	}
	return BulkResult{Count: min(n, f.Limit), More: n > f.Limit}, nil
}

// Notify wakes the dispatchers when db's transaction commits (at once outside one).
func (s *Store) Notify(ctx context.Context, db bun.IDB) error {
	if _, err := db.NewRaw(`SELECT pg_notify(?, '')`, s.channel).Exec(ctx); err != nil {
		return fmt.Errorf("outbox: notify: %w", err)
	}
	return nil
}
