package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// ErrNotDelivered refuses to resend an event that is not delivered (Retry replays a
// failed or pending one); nothing was written.
var ErrNotDelivered = errors.New("outbox: event is not delivered")

// Resend sends one delivered event again, in db's transaction: it becomes pending and
// due now with a fresh budget, keeping its idempotency key, payload and history, so a
// receiver that still has the key answers duplicate and applies nothing. Until it is
// delivered again it holds back its aggregate's later undelivered events, as any
// undelivered event does. Dispatchers are notified. It returns the event as resent, or
// ErrNotFound or ErrNotDelivered.
func (s *Store) Resend(ctx context.Context, db bun.IDB, id uuid.UUID) (StoredEvent, error) {
	return s.changeOne(ctx, db, id, func(cur state) error {
		if cur.Status != StatusDelivered {
			return ErrNotDelivered
		}
		return nil
	}, replaySet+`, delivered_at = NULL`)
}

// Retarget moves every undelivered (pending or failed) event addressed to from over to
// to, in one statement in db's transaction, and returns the events moved in creation
// order. Each becomes due now with a fresh budget, pending and dead letters alike
// (their history kept), since the old destination's failures say nothing of the new
// one. Dispatchers are notified. Delivered and skipped events keep their
// destination. An empty from, or from equal to to, is a *FilterError.
func (s *Store) Retarget(ctx context.Context, db bun.IDB, from, to string) ([]EventRef, error) {
	switch {
	case from == "":
		return nil, &FilterError{Field: "from", Detail: "is required"}
	case from == to:
		return nil, &FilterError{Field: "from", Detail: "is the destination the events would move to"}
	}
	var moved []EventRef
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewRaw(`WITH moved AS (
				UPDATE ? SET destination = ?, delivery_status = 'pending', delivery_attempts = 0,
					next_attempt_at = CASE WHEN delivery_status = 'pending' THEN least(next_attempt_at, now())
						ELSE now() END,
					failed_reason = NULL
				WHERE destination = ? AND delivery_status IN ('pending', 'failed')
				RETURNING id, aggregate_key, created_at
			) SELECT id, aggregate_key FROM moved ORDER BY created_at, id`,
			bun.Ident(s.table), to, from).Scan(ctx, &moved)
		if err != nil {
			return fmt.Errorf("outbox: retarget: %w", err)
		}
		if len(moved) == 0 {
			return nil
		}
		return s.Notify(ctx, tx)
	})
	return moved, err
}
