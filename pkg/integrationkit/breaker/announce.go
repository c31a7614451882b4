package breaker

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Announcement is a circuit transition on-call has not been told of yet.
type Announcement struct {
	Destination string `bun:"destination"`
	// Transition is the latest transition.
	Transition Transition `bun:"last_transition"`
	// Missed counts the earlier transitions since the last announcement (a circuit
	// that opened and closed again before anybody announced it has Transition
	// Recovered and Missed 1).
	Missed int `bun:"missed"`
}

// TakeAnnouncements returns the circuits whose transitions were not announced yet and
// marks them announced, in db's transaction: record the pages in the same transaction
// and each transition is announced once, even when the replica that caused it died
// right after. Circuits another transaction is taking are skipped.
func (b *Breaker) TakeAnnouncements(ctx context.Context, db bun.IDB) ([]Announcement, error) {
	var out []Announcement
	err := db.NewRaw(`
		WITH due AS (
			SELECT destination, generation - announced_generation - 1 AS missed FROM ?
			WHERE generation <> announced_generation AND last_transition IS NOT NULL
			FOR UPDATE SKIP LOCKED
		)
		UPDATE ? AS c SET announced_generation = c.generation FROM due
		WHERE c.destination = due.destination
		RETURNING c.destination, c.last_transition, due.missed`,
		bun.Ident(b.cfg.Table), bun.Ident(b.cfg.Table)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("breaker: take announcements: %w", err)
	}
	return out, nil
}
