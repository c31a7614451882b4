// Command logistics runs the logistics service: the finance webhook consumer and the
// warehouse API over shipments.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"handoff/docs/openapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/opsapi"
	"handoff/logistics/internal/processed"
	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/warehouseapi"
	"handoff/logistics/internal/webhookapi"
)

const usage = `Usage: logistics <command>

Commands:
  serve                 apply pending migrations (unless MIGRATE_ON_START=false) and
                        serve the finance webhook, the warehouse API, /healthz and /readyz
                        until SIGINT or SIGTERM
  migrate up            apply every pending migration
  migrate down          revert every migration (drops the logistics tables)
  migrate version       print the applied migration version
  retention run         delete processed events past RETENTION_PROCESSED_AGE now and
                        print how many
  healthcheck           exit 0 when the server at HTTP_ADDR answers /readyz (the
                        container healthcheck; the image has no curl)
  version               print the build: module version, VCS revision, Go version
  help [--json]         print this help; with --json, the variables below as JSON
                        (README.md's configuration table is made from it)

`

// errUsage marks a command line that names no known command.
var errUsage = errors.New("unknown command; run logistics help")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "logistics:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run executes the command in args with the environment environ ("NAME=value"
// entries); it returns when the command is done or, for serve, after ctx ends and
// the server has drained. An invalid configuration returns before anything starts.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && args[1] == "--json" {
			return envconf.WriteJSON(stdout, (&Config{}).settings().Program("logistics"))
		}
		_, err := fmt.Fprint(stdout, usage+(&Config{}).settings().Help())
		return err
	case "version":
		if len(args) != 1 {
			return errUsage
		}
		return buildinfo.Print(stdout, "logistics")
	case "healthcheck", "serve":
		if len(args) != 1 {
			return errUsage
		}
	case "retention":
		if len(args) != 2 || args[1] != "run" {
			return errUsage
		}
	case "migrate":
		if len(args) != 2 {
			return errUsage
		}
	default:
		return errUsage
	}
	cfg, err := parseConfig(environ, args[0])
	if err != nil {
		return err
	}
	switch args[0] {
	case "healthcheck":
		return httpserver.Healthcheck(ctx, cfg.HTTPAddr)
	case "serve":
		return serve(ctx, cfg, logging.New(stderr, "logistics", cfg.LogLevel))
	case "retention":
		return retentionCommand(ctx, cfg, stdout)
	default:
		return migrate(args[1], cfg, stdout)
	}
}

// serve runs the webhook consumer and the APIs until ctx ends, then drains. It
// checks the pool against the server before it migrates or listens.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
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
	e, err := newServer(db, cfg, log)
	if err != nil {
		return err
	}
	ret, err := newRetention(db, cfg.Retention, log)
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

// newServer wires every route of the service, and the OpenAPI document that lists them.
func newServer(db *bun.DB, cfg Config, log *slog.Logger) (*echo.Echo, error) {
	e := httpserver.New(log)
	httpserver.Health(e, func(ctx context.Context) error {
		return pgdb.CheckCurrent(ctx, db, migrations.Logistics())
	})
	reg := metrics.NewRegistry()
	hooks := metrics.NewWebhook(reg, "logistics")
	e.Use(hooks.Middleware(webhookapi.Path, webhookapi.BatchPath))
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
	opsapi.New(processed.NewStore(db), shipments, cfg.Tokens).Register(e)
	if err := apidoc.Register(e, openapi.Logistics()); err != nil {
		return nil, err
	}
	return e, nil
}

func migrate(cmd string, cfg Config, stdout io.Writer) (err error) {
	if cmd != "up" && cmd != "down" && cmd != "version" {
		return errUsage
	}
	m, err := pgdb.NewMigrator(cfg.DatabaseURL, migrations.Logistics())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	switch cmd {
	case "up":
		err = m.Up()
	case "down":
		err = m.Down()
	}
	if err != nil {
		return err
	}
	v, dirty, err := m.Version()
	if err != nil {
		return fmt.Errorf("migration version: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "version %d dirty %t\n", v, dirty)
	return err
}
