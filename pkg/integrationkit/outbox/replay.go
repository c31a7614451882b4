package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Refusals of Retry; nothing was written.
var (
	// ErrDelivered: a delivered event is never sent again by hand.
	ErrDelivered = errors.New("outbox: event is already delivered")
	// ErrInFlight: a dispatcher holds a live lease and is sending the event now.
	ErrInFlight = errors.New("outbox: event is being delivered right now")
)

// replaySet makes an event due now with a fresh budget. The history stays: attempt
// rows, request_count (so X-Attempt and attempt numbers keep counting up), last_error
// and last_status_code.
const replaySet = `delivery_status = 'pending', delivery_attempts = 0, next_attempt_at = now(),
	failed_reason = NULL, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`

// Retry replays one event: a dead letter (failed) or a pending event waiting for a
// later attempt becomes due now with its budget reset, and dispatchers are notified.
// It returns the event as replayed, or ErrNotFound, ErrDelivered or ErrInFlight.
func (s *Store) Retry(ctx context.Context, db bun.IDB, id uuid.UUID) (StoredEvent, error) {
	var out StoredEvent
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var cur struct {
			Status   string `bun:"delivery_status"`
			InFlight bool   `bun:"in_flight"`
		}
		err := tx.NewRaw(`SELECT delivery_status, coalesce(lease_expires_at > now(), false) AS in_flight
			FROM ? WHERE id = ? FOR UPDATE`, bun.Ident(s.table), id).Scan(ctx, &cur)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		case err != nil:
			return fmt.Errorf("outbox: retry %s: %w", id, err)
		case cur.Status == StatusDelivered:
			return fmt.Errorf("%w: %s", ErrDelivered, id)
		case cur.InFlight:
			return fmt.Errorf("%w: %s", ErrInFlight, id)
		}
		err = tx.NewRaw(`UPDATE ? SET `+replaySet+` WHERE id = ? RETURNING `+eventColumns,
			bun.Ident(s.table), id).Scan(ctx, &out)
		if err != nil {
			return fmt.Errorf("outbox: retry %s: %w", id, err)
		}
		return s.notify(ctx, tx)
	})
	return out, err
}

// RetryResult says what RetryMatching did.
type RetryResult struct {
	// Retried is how many events were replayed.
	Retried int
	// More is true when further events match: the limit stopped the replay early.
	More bool
}

// RetryMatching replays up to f.Limit events matching f in one set-based statement,
// oldest first, with Retry's semantics, and notifies dispatchers. f.Status must be
// failed (the default) or pending; a pending event is replayed only while it waits
// for a later attempt and no dispatcher holds it. Delivered events are never
// touched. Rows locked by a concurrent writer are skipped, not waited for.
func (s *Store) RetryMatching(ctx context.Context, db bun.IDB, f Filter) (RetryResult, error) {
	if f.Status == "" {
		f.Status = StatusFailed
	}
	switch {
	case f.Status == StatusDelivered:
		return RetryResult{}, &FilterError{Field: "status", Detail: "delivered events are never retried; use failed or pending"}
	case f.After != nil:
		return RetryResult{}, &FilterError{Field: "cursor", Detail: "a retry takes no cursor"}
	}
	if err := f.normalize(DefaultRetryLimit, MaxRetryLimit); err != nil {
		return RetryResult{}, err
	}
	var res RetryResult
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		picked := s.retryable(tx, f).Column("id").OrderExpr("created_at, id").
			Limit(int64(f.Limit)).For("UPDATE SKIP LOCKED")
		var ids []uuid.UUID
		err := tx.NewRaw(`WITH picked AS (?) UPDATE ? AS o SET `+replaySet+`
			FROM picked WHERE o.id = picked.id RETURNING o.id`, picked, bun.Ident(s.table)).Scan(ctx, &ids)
		if err != nil {
			return fmt.Errorf("outbox: retry matching: %w", err)
		}
		res.Retried = len(ids)
		if res.More, err = s.retryable(tx, f).Exists(ctx); err != nil {
			return fmt.Errorf("outbox: retry matching: %w", err)
		}
		if res.Retried == 0 {
			return nil
		}
		return s.notify(ctx, tx)
	})
	return res, err
}

// retryable selects the events RetryMatching may replay under f. An event it has just
// replayed no longer matches (it is pending and due now), so the same query after the
// update says whether more remain.
func (s *Store) retryable(db bun.IDB, f Filter) *bun.SelectQuery {
	q := f.apply(db.NewSelect().TableExpr("?", bun.Ident(s.table)))
	if f.Status == StatusPending {
		q = q.Where("next_attempt_at > now()").
			Where("(lease_expires_at IS NULL OR lease_expires_at <= now())")
	}
	return q
}

// notify wakes the dispatchers when the caller's transaction commits.
func (s *Store) notify(ctx context.Context, db bun.IDB) error {
	if _, err := db.NewRaw(`SELECT pg_notify(?, '')`, s.channel).Exec(ctx); err != nil {
		return fmt.Errorf("outbox: notify: %w", err)
	}
	return nil
}
