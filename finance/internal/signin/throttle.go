package signin

import (
	"context"
	"database/sql"
	"fmt"
	"net/netip"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// Attempt is a sign-in attempt Admit let through. It counts as a failure until Start
// withdraws it, so attempts in flight count against their client too.
type Attempt struct {
	id int64
}

// Admit decides whether client (its address) may try a token now and, if so, records
// the attempt. It returns a *ThrottledError when the client has PerClient attempts
// not proven right within the window, or all clients together Global. The decision
// and the record are one step per client across replicas (an advisory lock), so
// concurrent guesses from one client cannot pass its limit; the global ceiling may be
// passed by as many attempts as are in flight at once.
func (s *Store) Admit(ctx context.Context, client string) (Attempt, error) {
	key := clientKey(client)
	var row struct {
		ID         sql.NullInt64 `bun:"id"`
		Everyone   bool          `bun:"everyone"`
		RetryAfter int64         `bun:"retry_after"`
	}
	window := s.cfg.Window.Seconds()
	err := pgdb.RunInTx(ctx, s.db, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewRaw(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, attemptsTable+"\n"+key).Exec(ctx); err != nil {
			return err
		}
		return tx.NewRaw(`
			WITH purged AS (
				DELETE FROM ? WHERE attempted_at <= now() - make_interval(secs => ?)
			), recent AS (
				SELECT count(*) FILTER (WHERE client = ?) AS mine, count(*) AS total,
					min(attempted_at) FILTER (WHERE client = ?) AS mine_oldest, min(attempted_at) AS oldest
				FROM ? WHERE attempted_at > now() - make_interval(secs => ?)
			), admitted AS (
				INSERT INTO ? (client) SELECT ? FROM recent WHERE mine < ? AND total < ? RETURNING id
			)
			SELECT admitted.id, recent.mine < ? AS everyone,
				greatest(1, ceil(extract(epoch FROM greatest(
					CASE WHEN recent.mine >= ? THEN recent.mine_oldest END,
					CASE WHEN recent.total >= ? THEN recent.oldest END) + make_interval(secs => ?) - now())))::bigint AS retry_after
			FROM recent LEFT JOIN admitted ON true`,
			bun.Ident(attemptsTable), window,
			key, key, bun.Ident(attemptsTable), window,
			bun.Ident(attemptsTable), key, s.cfg.PerClient, s.cfg.Global,
			s.cfg.PerClient, s.cfg.PerClient, s.cfg.Global, window).Scan(ctx, &row)
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("signin: admit an attempt: %w", err)
	}
	if !row.ID.Valid {
		return Attempt{}, &ThrottledError{RetryAfter: time.Duration(row.RetryAfter) * time.Second, Everyone: row.Everyone}
	}
	return Attempt{id: row.ID.Int64}, nil
}

// clientKey is what the throttle counts by: an IPv4 address, or the /64 network of an
// IPv6 address, as one IPv6 host commonly holds a whole /64. Anything else counts as
// it is.
func clientKey(client string) string {
	addr, err := netip.ParseAddr(client)
	if err != nil {
		return client
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, 64).Masked().String()
}
