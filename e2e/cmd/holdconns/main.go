// Command holdconns holds idle connections to the PostgreSQL of TEST_DATABASE_URL
// (default: 127.0.0.1:5432 as postgres) until SIGINT or SIGTERM, to check that
// `make test` passes with only part of the server's max_connections free. Once a
// second it counts the server's client connections, and it prints the peak when it
// stops:
//
//	cd e2e && go run ./cmd/holdconns -n 60   # in one terminal; Ctrl-C prints the peak
//	make test                                # in another
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/pgtest"
)

func main() { command.Main("holdconns", run) }

func run(ctx context.Context, args, _ []string, out, _ io.Writer) error {
	flags := flag.NewFlagSet("holdconns", flag.ContinueOnError)
	n := flags.Int("n", 60, "connections to hold")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *n < 1 {
		return errors.New("-n must be at least 1")
	}
	conns := make([]*pgx.Conn, 0, *n)
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	}()
	for len(conns) < *n {
		c, err := pgx.Connect(ctx, pgtest.AdminURL())
		if err != nil {
			return fmt.Errorf("connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	fmt.Fprintf(out, "holding %d connections; interrupt to stop\n", *n)

	peak := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		var now int
		err := conns[0].QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'`).Scan(&now)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("count connections: %w", err)
		}
		peak = max(peak, now)
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	fmt.Fprintf(out, "peak %d client connections, %d of them held here\n", peak, *n)
	return nil
}
