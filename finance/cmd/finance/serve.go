package main

import (
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
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/webhook"
)

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
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.Dispatch.Concurrency+16)
	if err != nil {
		return err
	}
	defer db.Close()

	e := httpserver.New(log)
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

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return httpserver.Serve(ctx, cfg.HTTPAddr, e, httpserver.Timeouts{}, 10*time.Second, log)
	})
	if cfg.DispatchOn {
		d, err := newDispatcher(db, cfg, log)
		if err != nil {
			return err
		}
		g.Go(func() error { return d.Run(ctx) })
	}
	log.Info("finance started", "addr", cfg.HTTPAddr, "dispatcher", cfg.DispatchOn, "destination", cfg.WebhookURL)
	err = g.Wait()
	log.Info("finance stopped", "err", err)
	return err
}

func newDispatcher(db *bun.DB, cfg config, log *slog.Logger) (*delivery.Dispatcher, error) {
	store, err := outbox.NewStore(invoice.OutboxTable)
	if err != nil {
		return nil, err
	}
	br, err := breaker.New(cfg.Breaker)
	if err != nil {
		return nil, err
	}
	return delivery.New(db, store, webhook.NewSigner(cfg.WebhookSecrets), cfg.Dispatch,
		delivery.Deps{Log: log, Breaker: br})
}
