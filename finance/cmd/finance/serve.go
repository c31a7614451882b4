package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"handoff/finance/internal/invoice"
	"handoff/finance/internal/invoiceapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/webhook"
)

// defaultDBMaxConns is the pool when DB_MAX_CONNS is unset. Small on purpose: the
// API and the dispatcher hold a connection only per statement or transaction, and
// PostgreSQL does more with few busy backends than with many (make bench on two
// cores: 8 connections moved about twice the events of 32).
const defaultDBMaxConns = 8

// dispatchDBConns is the dispatcher's own pool: its LISTEN connection, and four for
// claims, settlements and the circuit. Apart from the API's pool, so requests that
// take every API connection cannot stop deliveries.
const dispatchDBConns = 5

// serve runs the HTTP API and the dispatcher until ctx ends, then drains both.
func serve(ctx context.Context, cfg config, logOut io.Writer) error {
	log := logging.New(logOut, "finance", cfg.LogLevel)
	if len(cfg.WebhookSecrets) == 0 {
		return errors.New("invalid WEBHOOK_SECRET: required to sign deliveries")
	}
	if cfg.MigrateOnStart {
		if err := pgdb.Migrate(cfg.DatabaseURL, migrations.Finance()); err != nil {
			return err
		}
	}
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, cmp.Or(cfg.DBMaxConns, defaultDBMaxConns))
	if err != nil {
		return err
	}
	defer db.Close()

	e := httpserver.New(log)
	cfg.TrustedProxies.Apply(e)
	httpserver.Health(e, func(ctx context.Context) error { return pgdb.CheckCurrent(ctx, db, migrations.Finance()) })
	svc, err := invoice.NewService(db, invoice.Config{Destination: cfg.WebhookURL})
	if err != nil {
		return fmt.Errorf("invalid LOGISTICS_WEBHOOK_URL: %w", err)
	}
	idem, err := idempotency.New(db, idempotency.Config{Logger: log})
	if err != nil {
		return err
	}
	invoiceapi.Register(e.Group(""), svc, cfg.Tokens, idem)
	guard := newGuard(cfg)
	warnRefused(guard, cfg, log)
	opsSvc, closeOps, err := newOps(db, cfg, guard, log)
	if err != nil {
		return err
	}
	defer closeOps()
	if err := registerOps(e, db, opsSvc, cfg, log); err != nil {
		return err
	}
	oc, err := newOncall(db, cfg, guard, log)
	if err != nil {
		return err
	}
	metrics.Register(e, oc.Metrics)
	var d *delivery.Dispatcher
	if cfg.DispatchOn {
		dispatchDB, err := pgdb.Open(ctx, cfg.DatabaseURL, dispatchDBConns)
		if err != nil {
			return err
		}
		defer dispatchDB.Close()
		if d, err = newDispatcher(dispatchDB, cfg, guard, log, oc.Observer); err != nil {
			return err
		}
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return httpserver.Serve(ctx, cfg.HTTPAddr, e, httpserver.Timeouts{}, 10*time.Second, log)
	})
	if d != nil {
		g.Go(func() error { return d.Run(ctx) })
	}
	for _, r := range oc.Runners {
		g.Go(func() error { return r.Run(ctx) })
	}
	log.Info("finance started", "addr", cfg.HTTPAddr, "dispatcher", cfg.DispatchOn, "destination", cfg.WebhookURL)
	err = g.Wait()
	log.Info("finance stopped", "err", err)
	return err
}

func newDispatcher(db *bun.DB, cfg config, guard *egress.Dialer, log *slog.Logger, obs delivery.Observer) (*delivery.Dispatcher, error) {
	store, err := outbox.NewStore(invoice.OutboxTable)
	if err != nil {
		return nil, err
	}
	br, err := breaker.New(cfg.Breaker)
	if err != nil {
		return nil, err
	}
	return delivery.New(db, store, webhook.NewSigner(cfg.WebhookSecrets), cfg.Dispatch,
		delivery.Deps{Log: log, Breaker: br, Guard: guard, Observer: obs})
}
