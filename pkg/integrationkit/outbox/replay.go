package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Refusals of the operators' changes; nothing was written.
var (
	// ErrDelivered: a delivered event is not replayed or skipped; Resend sends it again.
	ErrDelivered = errors.New("outbox: event is already delivered")
	// ErrInFlight: a dispatcher holds a live lease and is sending the event now.
	ErrInFlight = errors.New("outbox: event is being delivered right now")
	// ErrSkipped: an operator gave the event up; it is never sent again.
	ErrSkipped = errors.New("outbox: event was skipped")
)

// replaySet makes an event due now with a fresh budget. The history stays: attempt
// rows, request_count (so X-Attempt and attempt numbers keep counting up), last_error
// and last_status_code.
const replaySet = `delivery_status = 'pending', delivery_attempts = 0, next_attempt_at = now(),
	failed_reason = NULL, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`

// Retry replays one event in db's transaction: a dead letter (failed) or a pending
// event waiting for a later attempt becomes due now with its budget reset, and
// dispatchers are notified. It returns the event as replayed, or ErrNotFound,
// ErrDelivered, ErrSkipped or ErrInFlight.
func (s *Store) Retry(ctx context.Context, db bun.IDB, id uuid.UUID) (StoredEvent, error) {
	return s.changeOne(ctx, db, id, func(cur state) error {
		switch {
		case cur.Status == StatusDelivered:
			return ErrDelivered
		case cur.Status == StatusSkipped:
			return ErrSkipped
		case cur.InFlight:
			return ErrInFlight
		}
		return nil
	}, replaySet)
}

// RetryMatching replays up to f.Limit events matching f in one set-based statement,
// oldest first, with Retry's semantics, in db's transaction, and notifies
// dispatchers. f.Status must be failed (the default) or pending; a pending event is
// replayed only while it waits for a later attempt and no dispatcher holds it.
// Delivered and skipped events are never touched. Rows locked by a concurrent writer
// are skipped, not waited for.
func (s *Store) RetryMatching(ctx context.Context, db bun.IDB, f Filter) (BulkResult, error) {
	return s.changeBulk(ctx, db, f, replay)
}

// CountRetryable is RetryMatching's dry run: it checks f the same way and says how
// many events RetryMatching would replay now, and whether more would remain, without
// writing anything.
func (s *Store) CountRetryable(ctx context.Context, db bun.IDB, f Filter) (BulkResult, error) {
	return s.countBulk(ctx, db, f, replay)
}

// replay is RetryMatching's change. An event it has just replayed no longer matches
// (it is pending and due now), so the same query after the update says whether more
// remain.
var replay = bulkChange{
	verb: "retry",
	refuse: func(status string) string {
		switch status {
		case StatusDelivered:
			return "delivered events are never retried; use failed or pending"
		case StatusSkipped:
			return "skipped events are never retried; use failed or pending"
		}
		return ""
	},
	selects: func(s *Store, db bun.IDB, f Filter) *bun.SelectQuery {
		q := f.apply(db.NewSelect().TableExpr("?", bun.Ident(s.table)))
		if f.Status == StatusPending {
			q = q.Where("next_attempt_at > now()").
				Where("(lease_expires_at IS NULL OR lease_expires_at <= now())")
		}
		return q
	},
	set: replaySet,
}
