// Command logistics runs the logistics service: the finance webhook consumer and the
// warehouse API over shipments.
package main

import (
	"context"
	"io"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/logging"
)

func main() { command.Main("logistics", run) }

// run executes the command in args with the environment environ ("NAME=value"
// entries); it returns when the command is done or, for serve, after ctx ends and
// the server has drained. A command line asking for help prints it to stdout and runs
// nothing; a mistake on it is a *cli.UsageError (exit status 2), found before the
// configuration is read. An invalid configuration returns before anything starts.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	return binary(environ, stdout, stderr).Run(ctx, args)
}

// binary declares logistics' command line: its configuration, its migrations and
// retention job, and serve; the kit adds migrate, retention run, healthcheck, version
// and help --json. Each command reads environ into a Config when it runs, writes its
// result to stdout and its progress and logs to stderr.
func binary(environ []string, stdout, stderr io.Writer) command.Binary[Config] {
	load := func(cmd string) (Config, error) { return parseConfig(environ, cmd) }
	return command.Binary[Config]{
		Name: "logistics", Usage: usage, Settings: (&Config{}).settings(), Load: load,
		Stdout: stdout, Stderr: stderr,
		HTTPAddr:    func(c Config) string { return c.HTTPAddr },
		DatabaseURL: func(c Config) string { return c.DatabaseURL },
		Migrations:  migrations.Logistics(),
		Retention:   retentionRun(),
		Commands: []cli.Command{{
			Name: "serve", Summary: "serve the finance webhook, the warehouse and ops APIs, /healthz, /readyz, /metrics and /openapi.json",
			Help: "Apply pending migrations (unless MIGRATE_ON_START=false) and serve the finance webhook,\n" +
				"the warehouse API, /healthz and /readyz until SIGINT or SIGTERM, then drain. See\n" +
				"logistics help for the environment.",
			Run: func(ctx context.Context, _ []string) error {
				cfg, err := load("serve")
				if err != nil {
					return err
				}
				return serve(ctx, cfg, logging.New(stderr, "logistics", cfg.LogLevel))
			},
		}},
	}
}
