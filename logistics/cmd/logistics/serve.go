package main

import (
	"context"
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"handoff/docs/openapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/opsapi"
	"handoff/logistics/internal/processedevents"
	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/warehouseapi"
	"handoff/logistics/internal/webhookapi"
)

// serve runs the webhook consumer and the APIs until ctx ends, then drains. It
// checks the pool against the server before it migrates or listens.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	tel, err := tracing.Start(ctx, cfg.Tracing, buildinfo.Version(), log)
	if err != nil {
		return err
	}
	defer tel.Close() // flushes the spans still queued, within tracing.CloseTimeout
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns)
	if err != nil {
		return err
	}
	defer db.Close()
	most, err := pgdb.MaxConnections(ctx, db)
	if err != nil {
		return err
	}
	if cfg.DBMaxConns > most {
		return envconf.Invalid("DB_MAX_CONNS", "%d connections exceed the server's max_connections of %d", cfg.DBMaxConns, most)
	}
	if cfg.MigrateOnStart {
		if err := pgdb.Migrate(cfg.DatabaseURL, migrations.Logistics()); err != nil {
			return err
		}
	}
	if cfg.Tokens.Roles()[warehouseapi.Role] == 0 {
		log.Warn("API_TOKENS has no warehouse token: the warehouse API will refuse every request")
	}
	reg := metrics.NewRegistry()
	e, err := newServer(db, cfg, reg, log, httpserver.WithTracing(tel.TracerProvider()))
	if err != nil {
		return err
	}
	ret, err := newRetention(db, cfg.Retention, metrics.NewRetention(reg, "logistics"), log)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return httpserver.Serve(ctx, cfg.HTTPAddr, e, httpserver.Timeouts{}, cfg.ShutdownGrace, log)
	})
	g.Go(func() error { return ret.Run(ctx) })
	return g.Wait()
}

// newServer wires every route of the service, /metrics of reg, and the OpenAPI
// document that lists them.
func newServer(db *bun.DB, cfg Config, reg *prometheus.Registry, log *slog.Logger, opts ...httpserver.Option) (*echo.Echo, error) {
	e := httpserver.New(log, opts...)
	httpserver.Health(e, func(ctx context.Context) error {
		return pgdb.CheckCurrent(ctx, db, migrations.Logistics())
	})
	hooks := metrics.NewWebhook(reg, "logistics")
	e.Use(metrics.NewHTTP(reg, "logistics").Middleware(), hooks.Middleware(webhookapi.Path, webhookapi.BatchPath))
	metrics.Register(e, reg)
	shipments := shipment.NewService(db)
	wh, err := webhookapi.New(webhookapi.Config{
		DB: db, Shipments: shipments, Verifier: webhook.NewVerifier(cfg.WebhookKeys), Log: log,
		OnProcessed: hooks.Processed, BatchMaxItems: cfg.BatchMaxItems,
	})
	if err != nil {
		return nil, err
	}
	wh.Register(e)
	warehouseapi.New(shipments, cfg.Tokens).Register(e)
	opsapi.New(processedevents.NewStore(db), shipments, cfg.Tokens).Register(e)
	if err := apidoc.Register(e, openapi.Logistics()); err != nil {
		return nil, err
	}
	return e, nil
}
