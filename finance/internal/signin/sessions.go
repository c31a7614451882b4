package signin

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Start records session (the value the browser keeps) as live for ttl, signed in by
// principal, and withdraws a, the attempt that proved its token, from the failures. It
// also deletes sessions that have expired.
func (s *Store) Start(ctx context.Context, a Attempt, session, principal string, ttl time.Duration) error {
	_, err := s.db.NewRaw(`
		WITH withdrawn AS (
			DELETE FROM ? WHERE id = ?
		), expired AS (
			DELETE FROM ? WHERE expires_at <= now()
		)
		INSERT INTO ? (session_hash, principal, expires_at) VALUES (?, ?, now() + make_interval(secs => ?))`,
		bun.Ident(attemptsTable), a.id, bun.Ident(sessionsTable), bun.Ident(sessionsTable),
		digest(session), principal, ttl.Seconds()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("signin: start a session: %w", err)
	}
	return nil
}

// Active reports whether session was started and has neither expired nor ended: one
// lookup of its primary key.
func (s *Store) Active(ctx context.Context, session string) (bool, error) {
	var live bool
	err := s.db.NewRaw(`SELECT EXISTS (SELECT 1 FROM ? WHERE session_hash = ? AND expires_at > now())`,
		bun.Ident(sessionsTable), digest(session)).Scan(ctx, &live)
	if err != nil {
		return false, fmt.Errorf("signin: look up a session: %w", err)
	}
	return live, nil
}

// End ends session on every replica at once. Ending a session that is not live is no
// error.
func (s *Store) End(ctx context.Context, session string) error {
	_, err := s.db.NewRaw(`DELETE FROM ? WHERE session_hash = ?`, bun.Ident(sessionsTable), digest(session)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("signin: end a session: %w", err)
	}
	return nil
}

// digest is the key of a session in the table: the table never holds a value that
// would work as a cookie.
func digest(session string) []byte {
	sum := sha256.Sum256([]byte(session))
	return sum[:]
}
