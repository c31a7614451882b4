package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// ErrNotDeadLetter refuses to skip an event that is not a dead letter (failed);
// nothing was written.
var ErrNotDeadLetter = errors.New("outbox: event is not a dead letter")

// skipSet gives a dead letter up. Its history stays: attempts, last error, failed
// reason.
const skipSet = `delivery_status = 'skipped', skipped_at = now(),
	lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`

// Skip gives up one dead letter for good, in db's transaction: it becomes skipped, is
// never sent again, and no longer holds back its aggregate (the claim treats it as
// delivered), so the aggregate's later events go on; dispatchers are notified. It
// returns the event as skipped, or ErrNotFound or ErrNotDeadLetter.
func (s *Store) Skip(ctx context.Context, db bun.IDB, id uuid.UUID) (StoredEvent, error) {
	return s.changeOne(ctx, db, id, func(cur state) error {
		if cur.Status != StatusFailed {
			return ErrNotDeadLetter
		}
		return nil
	}, skipSet)
}

// SkipMatching skips up to f.Limit dead letters matching f in one set-based
// statement, oldest first, with Skip's semantics, in db's transaction. f.Status must
// be failed (the default): only dead letters are skipped. Rows locked by a concurrent
// writer are skipped over, not waited for.
func (s *Store) SkipMatching(ctx context.Context, db bun.IDB, f Filter) (BulkResult, error) {
	return s.changeBulk(ctx, db, f, skip)
}

// CountSkippable is SkipMatching's dry run: it checks f the same way and says how
// many dead letters SkipMatching would skip now, and whether more would remain,
// without writing anything.
func (s *Store) CountSkippable(ctx context.Context, db bun.IDB, f Filter) (BulkResult, error) {
	return s.countBulk(ctx, db, f, skip)
}

// skip is SkipMatching's change: the dead letters matching the filter.
var skip = bulkChange{
	verb: "skip",
	refuse: func(status string) string {
		if status != StatusFailed {
			return "only dead letters are skipped; use failed"
		}
		return ""
	},
	selects: func(s *Store, db bun.IDB, f Filter) *bun.SelectQuery {
		return f.apply(db.NewSelect().TableExpr("?", bun.Ident(s.table)))
	},
	set: skipSet,
}
