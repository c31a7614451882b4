package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// OwedPage is a page on-call is owed for an event's settled outcome (Outcome.Page).
type OwedPage struct {
	Page         string    `bun:"page"`
	EventID      uuid.UUID `bun:"id"`
	AggregateKey string    `bun:"aggregate_key"`
	Destination  string    `bun:"destination"`
	StatusCode   int       `bun:"status_code"`
	Error        string    `bun:"error"`
	FailedReason string    `bun:"failed_reason"`
	// Snippet is the start of the last attempt's response body.
	Snippet string `bun:"snippet"`
}

// TakeOwedPages takes the owed pages of up to limit events and clears them, in db's
// transaction (one OwedPage per page: an event may owe several):
// record them in the same transaction and a page is taken exactly once, whichever
// replica takes it and whenever the one that settled the event died. Rows another
// transaction is taking are skipped.
func (s *Store) TakeOwedPages(ctx context.Context, db bun.IDB, limit int) ([]OwedPage, error) {
	var out []OwedPage
	err := db.NewRaw(`
		WITH owed AS (
			SELECT id, page_owed FROM ? WHERE page_owed IS NOT NULL ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED
		), taken AS (
			UPDATE ? AS o SET page_owed = NULL FROM owed
			WHERE o.id = owed.id
			RETURNING owed.id, owed.page_owed AS pages, o.aggregate_key, o.destination,
				coalesce(o.last_status_code, 0) AS status_code, coalesce(o.last_error, '') AS error,
				coalesce(o.failed_reason, '') AS failed_reason
		)
		SELECT taken.id, p.page, taken.aggregate_key, taken.destination, taken.status_code, taken.error,
			taken.failed_reason, coalesce((SELECT a.response_snippet FROM ? AS a WHERE a.outbox_id = taken.id
				ORDER BY a.attempt_no DESC LIMIT 1), '') AS snippet
		FROM taken, unnest(taken.pages) AS p(page)`,
		bun.Ident(s.table), limit, bun.Ident(s.table), bun.Ident(s.table+"_attempts")).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("outbox: take owed pages: %w", err)
	}
	return out, nil
}
