// Command finance is the finance service of handoff: the invoice API for clerks, the
// transactional outbox, and the dispatcher that hands paid invoices to logistics.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `finance — invoices, payments, refunds, and the outbox that tells logistics.

Usage:
  finance serve                  run the API and the dispatcher (migrates first unless
                                 MIGRATE_ON_START=false)
  finance migrate up|down|version
  finance help

`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "finance:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: finance serve | migrate up|down|version | help")

func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage+envDoc)
		return err
	}
	cfg, err := parseConfig(lookup)
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, stderr)
	case "migrate":
		return migrate(cfg, args[1:], stdout)
	default:
		return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
	}
}
