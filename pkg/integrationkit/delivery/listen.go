package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"handoff/pkg/integrationkit/pgdb"
)

// listen holds one connection LISTENing on the outbox channel and wakes the loop on
// every notice. It reconnects with a capped delay, waking the loop after each
// reconnect so a notice sent while it was away is not missed for long.
func (d *Dispatcher) listen(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("listen connection lost; the cron tick covers until it is back", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
		d.Wake()
	}
}

func (d *Dispatcher) listenOnce(ctx context.Context) error {
	conn, err := d.db.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close()
	return pgdb.WithPgx(conn, func(pc *pgx.Conn) error {
		// The connection never goes back to the pool LISTENing: close it on the way out
		// so database/sql discards it.
		defer pc.Close(context.Background())
		if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{d.store.Channel()}.Sanitize()); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		d.Wake()
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return fmt.Errorf("listen: wait: %w", err)
			}
			d.Wake()
		}
	})
}
