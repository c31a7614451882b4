package breaker

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Pause stops every request to dest, on every replica, from the next Acquire on:
// Acquire refuses it with Permit.Paused, whatever its circuit's state, and grants no
// probe, until Resume. It runs in db's transaction and reports false when dest was
// paused already (nothing changed). The circuit's own state and failure streak are
// kept.
func (b *Breaker) Pause(ctx context.Context, db bun.IDB, dest string) (bool, error) {
	var paused []string
	err := db.NewRaw(`INSERT INTO ? AS c (destination, paused_at) VALUES (?, now())
		ON CONFLICT (destination) DO UPDATE SET paused_at = now() WHERE c.paused_at IS NULL
		RETURNING c.destination`, bun.Ident(b.cfg.Table), dest).Scan(ctx, &paused)
	if err != nil && !isNoRows(err) {
		return false, fmt.Errorf("breaker: pause %s: %w", dest, err)
	}
	return len(paused) == 1, nil
}

// Resume lets requests to dest go again, as its circuit admits them, in db's
// transaction, and reports false when dest was not paused (nothing changed). What
// callers deferred while it was paused waits out Config.PausedWait unless the caller
// of Resume makes it due.
func (b *Breaker) Resume(ctx context.Context, db bun.IDB, dest string) (bool, error) {
	n, err := b.exec(ctx, db, `UPDATE ? SET paused_at = NULL WHERE destination = ? AND paused_at IS NOT NULL`,
		bun.Ident(b.cfg.Table), dest)
	return n == 1, err
}

// Paused reports whether dest is paused.
func (b *Breaker) Paused(ctx context.Context, db bun.IDB, dest string) (bool, error) {
	var paused bool
	err := db.NewRaw(`SELECT paused_at IS NOT NULL FROM ? WHERE destination = ?`,
		bun.Ident(b.cfg.Table), dest).Scan(ctx, &paused)
	if isNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("breaker: paused %s: %w", dest, err)
	}
	return paused, nil
}
