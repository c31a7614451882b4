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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"golang.org/x/sync/errgroup"

	"handoff/docs/openapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/logging"
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

const usage = `Usage: logistics <command>

Commands:
  serve                 apply pending migrations (unless MIGRATE_ON_START=false) and
                        serve the finance webhook, the warehouse API, /healthz and /readyz
                        until SIGINT or SIGTERM
  migrate up            apply every pending migration
  migrate down          revert every migration (drops the logistics tables)
  migrate version       print the applied migration version
  retention run         delete processed events past RETENTION_PROCESSED_AGE now and
                        print how many (what it does, batch by batch, on stderr)
  healthcheck           exit 0 when the server at HTTP_ADDR answers /readyz (the
                        container healthcheck; the image has no curl)
  version               print the build: module version, VCS revision, Go version
  help [<command>]      print this help, or a command's (the same as <command> --help)
  help --json           the variables below as JSON (README.md's configuration table
                        is made from it)

Exit status: 0 done, 1 failed, 2 a mistake on the command line (an unknown command
or flag, a missing or extra argument), printed on stderr with the usage of the
command it was made in.

`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Status("logistics", err, os.Stderr))
}

// run executes the command in args with the environment environ ("NAME=value"
// entries); it returns when the command is done or, for serve, after ctx ends and
// the server has drained. A command line asking for help prints it to stdout and runs
// nothing; a mistake on it is a *cli.UsageError (exit status 2), found before the
// configuration is read. An invalid configuration returns before anything starts.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 2 && args[0] == "help" && args[1] == "--json" {
		return envconf.WriteJSON(stdout, (&Config{}).settings().Program("logistics"))
	}
	call, err := program(environ, stdout, stderr).Parse(args)
	if err != nil {
		return err
	}
	if call.Help != "" {
		_, err := io.WriteString(stdout, call.Help)
		return err
	}
	return call.Run(ctx)
}

// program declares every command of logistics; each reads environ into a Config when
// it runs, writes its result to stdout and its progress and logs to stderr.
func program(environ []string, stdout, stderr io.Writer) cli.Program {
	// configured runs f with the configuration command reads.
	configured := func(command string, f func(ctx context.Context, cfg Config) error) cli.Runner {
		return func(ctx context.Context, _ []string) error {
			cfg, err := parseConfig(environ, command)
			if err != nil {
				return err
			}
			return f(ctx, cfg)
		}
	}
	migrateCmd := func(cmd, summary string) cli.Command {
		return cli.Command{Name: "migrate " + cmd, Summary: summary,
			Run: configured("migrate", func(_ context.Context, cfg Config) error { return migrate(cmd, cfg, stdout) })}
	}
	return cli.Program{Name: "logistics", Usage: usage, Help: usage + (&Config{}).settings().Help(), Commands: []cli.Command{
		{Name: "serve", Summary: "serve the finance webhook, the warehouse and ops APIs, /healthz, /readyz, /metrics and /openapi.json",
			Help: "Apply pending migrations (unless MIGRATE_ON_START=false) and serve the finance webhook,\n" +
				"the warehouse API, /healthz and /readyz until SIGINT or SIGTERM, then drain. See\n" +
				"logistics help for the environment.",
			Run: configured("serve", func(ctx context.Context, cfg Config) error {
				return serve(ctx, cfg, logging.New(stderr, "logistics", cfg.LogLevel))
			})},
		migrateCmd("up", "apply every pending migration"),
		migrateCmd("down", "revert every migration (drops the logistics tables)"),
		migrateCmd("version", "print the applied migration version"),
		{Name: "retention run", Summary: "delete processed events past RETENTION_PROCESSED_AGE now",
			Help: "Delete the processed events older than RETENTION_PROCESSED_AGE now, as the\n" +
				"RETENTION_SCHEDULE does, in batches of RETENTION_BATCH. Says on stderr what it does\n" +
				"and how many rows so far after each batch; stdout gets one line per table.",
			Run: configured("retention", func(ctx context.Context, cfg Config) error {
				return retentionCommand(ctx, cfg, stdout, stderr)
			})},
		{Name: "healthcheck", Summary: "exit 0 when the server at HTTP_ADDR answers /readyz",
			Help: "Exit 0 when the server at HTTP_ADDR answers /readyz, 1 otherwise: the container\n" +
				"healthcheck (the image has no curl).",
			Run: configured("healthcheck", func(ctx context.Context, cfg Config) error {
				return httpserver.Healthcheck(ctx, cfg.HTTPAddr)
			})},
		{Name: "version", Summary: "print the build: module version, VCS revision, Go version",
			Run: func(context.Context, []string) error { return buildinfo.Print(stdout, "logistics") }},
	}}
}

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

func migrate(cmd string, cfg Config, stdout io.Writer) (err error) {
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
