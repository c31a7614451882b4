// Command riverbaseline is the benchmark's River baseline: it drains the benchmark's
// seeded events (package seed: the same types, payloads and idempotency keys handoff's
// outbox is seeded with) through one River client whose worker posts each one to
// logistics' webhook as finance's single delivery mode does, and prints what it
// measured as one JSON object (baseline.Result). cmd/bench builds and runs it, on a fresh
// database for River and a fresh logistics, and prints its rows beside handoff's.
//
// It is a module of its own, outside go.work: River's requirements would otherwise
// raise versions in the workspace the services are built in. Build it with GOWORK=off.
//
//	cd e2e/riverbaseline && GOWORK=off go run . -database URL -webhook URL -events 1500
//
// WEBHOOK_SECRET holds the whsec_ secret logistics verifies with.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"handoff/pkg/integrationkit/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "riverbaseline:", err)
		os.Exit(1)
	}
}

// config is the command line and WEBHOOK_SECRET.
type config struct {
	database string
	webhook  string
	secrets  [][]byte
	events   int
	// maxWorkers is the one queue's MaxWorkers; fetchCooldown River's FetchCooldown
	// (0: River's default).
	maxWorkers    int
	fetchCooldown time.Duration
	dbConns       int
	timeout       time.Duration
}

func parseFlags(args []string, secret string) (config, error) {
	fs := flag.NewFlagSet("riverbaseline", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.database, "database", "", "URL of an empty database; River's tables are migrated into it")
	fs.StringVar(&c.webhook, "webhook", "", "logistics' POST /webhooks/finance URL")
	fs.IntVar(&c.events, "events", 1500, "events to drain (whole invoices, two events each)")
	fs.IntVar(&c.maxWorkers, "max-workers", 100, "MaxWorkers of the client's one queue")
	fs.DurationVar(&c.fetchCooldown, "fetch-cooldown", 0, "River's FetchCooldown (0: River's default)")
	fs.IntVar(&c.dbConns, "db-conns", 10, "the client's pgx pool size")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "give up when the events are not all completed by then")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs []error
	if c.database == "" || c.webhook == "" {
		errs = append(errs, errors.New("-database and -webhook are required"))
	}
	if c.events < 1 || c.maxWorkers < 1 || c.dbConns < 2 {
		errs = append(errs, errors.New("-events and -max-workers must be at least 1, -db-conns at least 2"))
	}
	var err error
	if c.secrets, err = webhook.ParseSecrets(secret); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOK_SECRET: %w", err))
	}
	return c, errors.Join(errs...)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args, os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	res, err := drain(ctx, cfg)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}
