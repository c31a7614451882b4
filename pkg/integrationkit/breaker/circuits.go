package breaker

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Circuit is one destination's circuit as operators see it.
type Circuit struct {
	Destination string    `bun:"destination"`
	State       State     `bun:"state"`
	Failures    int       `bun:"failures"`
	ChangedAt   time.Time `bun:"changed_at"`
	// OpenUntil is when an open circuit may let a probe through; nil when not open.
	OpenUntil *time.Time `bun:"open_until"`
	// PausedAt is when an operator paused the destination; nil when not paused.
	PausedAt *time.Time `bun:"paused_at"`
}

// Circuits returns the circuit of every destination that ever failed or was paused,
// by destination. A destination without a row has a closed circuit and is not paused.
func (b *Breaker) Circuits(ctx context.Context, db bun.IDB) ([]Circuit, error) {
	var out []Circuit
	err := db.NewRaw(`SELECT destination, state, failures, changed_at, paused_at,
			CASE WHEN state = 'open' THEN open_until END AS open_until
		FROM ? ORDER BY destination`, bun.Ident(b.cfg.Table)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("breaker: circuits: %w", err)
	}
	return out, nil
}
