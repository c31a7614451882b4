package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"handoff/docs/openapi"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/invoiceapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
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

// serve runs the HTTP API and the dispatcher until ctx ends, then drains both. It
// checks the pools against the server before it migrates or listens.
func serve(ctx context.Context, cfg config, logOut io.Writer) error {
	log := logging.New(logOut, "finance", cfg.LogLevel)
	tel, err := tracing.Start(ctx, cfg.Tracing, buildinfo.Version(), log)
	if err != nil {
		return err
	}
	defer tel.Close() // flushes the spans still queued, within tracing.CloseTimeout
	tp := tel.TracerProvider()
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkPools(ctx, db, cfg); err != nil {
		return err
	}
	if cfg.MigrateOnStart {
		if err := pgdb.Migrate(cfg.DatabaseURL, migrations.Finance()); err != nil {
			return err
		}
	}

	guard := newGuard(cfg)
	warnRefused(guard, cfg, log)
	oc, err := newOncall(db, cfg, guard, log)
	if err != nil {
		return err
	}
	e, closeOps, err := newServer(db, cfg, guard, oc.Metrics, log, httpserver.WithTracing(tp))
	if err != nil {
		return err
	}
	defer closeOps()
	var d *delivery.Dispatcher
	if cfg.DispatchOn {
		dispatchDB, err := pgdb.Open(ctx, cfg.DatabaseURL, dispatchDBConns)
		if err != nil {
			return err
		}
		defer dispatchDB.Close()
		if d, err = newDispatcher(dispatchDB, cfg, guard, log, oc.Observer, tp); err != nil {
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
	log.Info("finance started", "addr", cfg.HTTPAddr, "dispatcher", cfg.DispatchOn, "mode", cfg.Dispatch.Mode,
		"destination", cfg.WebhookURL, "tracing", tp != nil)
	err = g.Wait()
	log.Info("finance stopped", "err", err)
	return err
}

// newServer wires every route of finance: /healthz and /readyz, the clerks' API, the
// ops API and the dashboard, /metrics of reg, and the OpenAPI document that lists them
// all. closeOps releases the ops service's logistics client, which calls through guard.
func newServer(db *bun.DB, cfg config, guard *egress.Dialer, reg *prometheus.Registry, log *slog.Logger,
	opts ...httpserver.Option) (e *echo.Echo, closeOps func(), err error) {
	e = httpserver.New(log, opts...)
	e.Use(metrics.NewHTTP(reg, "finance").Middleware())
	cfg.TrustedProxies.Apply(e)
	httpserver.Health(e, func(ctx context.Context) error { return pgdb.CheckCurrent(ctx, db, migrations.Finance()) })
	svc, err := invoice.NewService(db, invoice.Config{Destination: cfg.WebhookURL})
	if err != nil {
		return nil, nil, fmt.Errorf("invalid LOGISTICS_WEBHOOK_URL: %w", err)
	}
	idem, err := idempotency.New(db, idempotency.Config{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	invoiceapi.Register(e.Group(""), svc, cfg.Tokens, idem)
	opsSvc, closeOps, err := newOps(db, cfg, guard, log)
	if err != nil {
		return nil, nil, err
	}
	if err := registerOps(e, db, opsSvc, cfg, log); err != nil {
		closeOps()
		return nil, nil, err
	}
	metrics.Register(e, reg)
	if err := apidoc.Register(e, openapi.Finance()); err != nil {
		closeOps()
		return nil, nil, err
	}
	return e, closeOps, nil
}

// checkPools refuses a configuration whose pools (DB_MAX_CONNS, and the dispatcher's
// when it runs here) could never fill on the server: past its max_connections, a
// request would wait for a slot that does not exist.
func checkPools(ctx context.Context, db *bun.DB, cfg config) error {
	most, err := pgdb.MaxConnections(ctx, db)
	if err != nil {
		return err
	}
	pools, dispatcher := cfg.DBMaxConns, ""
	if cfg.DispatchOn {
		pools += dispatchDBConns
		dispatcher = fmt.Sprintf(" with the dispatcher's %d", dispatchDBConns)
	}
	if pools > most {
		return envconf.Invalid("DB_MAX_CONNS", "%d connections%s exceed the server's max_connections of %d",
			pools, dispatcher, most)
	}
	return nil
}

// deliveryTables returns the stores of finance's outbox and of its destinations'
// circuits, which the dispatcher, the on-call jobs and the ops service share.
func deliveryTables(cfg config) (*outbox.Store, *breaker.Breaker, error) {
	store, err := outbox.NewStore(invoice.OutboxTable)
	if err != nil {
		return nil, nil, err
	}
	br, err := breaker.New(cfg.Breaker)
	if err != nil {
		return nil, nil, err
	}
	return store, br, nil
}

// newDispatcher builds the dispatcher; tp nil delivers untraced.
func newDispatcher(db *bun.DB, cfg config, guard *egress.Dialer, log *slog.Logger, obs delivery.Observer,
	tp trace.TracerProvider) (*delivery.Dispatcher, error) {
	store, br, err := deliveryTables(cfg)
	if err != nil {
		return nil, err
	}
	return delivery.New(db, store, webhook.NewSigner(cfg.WebhookSecrets), cfg.Dispatch,
		delivery.Deps{Log: log, Breaker: br, Guard: guard, Observer: obs, TracerProvider: tp})
}
