// Command finance is the finance service of handoff: the invoice API for clerks, the
// transactional outbox, and the dispatcher that hands paid invoices to logistics.
package main

import (
	"context"
	"io"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
)

func main() { command.Main("finance", run) }

// run executes the command in args with the environment environ ("NAME=value"
// entries); it returns when the command is done or, for serve, after ctx ends and
// everything has drained. A command line asking for help prints it to stdout and runs
// nothing; a mistake on it is a *cli.UsageError (exit status 2), found before the
// configuration is read. An invalid configuration returns before anything starts.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	return env{environ: environ, stdout: stdout, stderr: stderr}.binary().Run(ctx, args)
}

// env is what a command runs with: the process's environment, which the commands
// that need it read into a config, and where it writes: its result to stdout, its
// progress and logs to stderr.
type env struct {
	environ        []string
	stdout, stderr io.Writer
}

// config reads the environment for cmd (the first word of the command line).
func (e env) config(cmd string) (config, error) { return parseConfig(e.environ, cmd) }

// binary declares finance's command line: its configuration, its migrations and
// retention jobs, and its own commands; the kit adds migrate, retention run,
// healthcheck, version and help --json.
func (e env) binary() command.Binary[config] {
	cmds := []cli.Command{{
		Name: "serve", Summary: "run the API and the dispatcher",
		Help: "Run the API, the dispatcher and the on-call jobs until SIGINT or SIGTERM, then drain.\n" +
			"Migrates the database first unless MIGRATE_ON_START=false. See finance help for\n" +
			"the environment.",
		Run: func(ctx context.Context, _ []string) error {
			cfg, err := e.config("serve")
			if err != nil {
				return err
			}
			return serve(ctx, cfg, e.stderr)
		},
	}}
	cmds = append(cmds, e.outboxCommands()...)
	return command.Binary[config]{
		Name: "finance", Usage: usage, Settings: (&config{}).settings(), Load: e.config,
		Stdout: e.stdout, Stderr: e.stderr,
		HTTPAddr:    func(c config) string { return c.HTTPAddr },
		DatabaseURL: func(c config) string { return c.DatabaseURL },
		Migrations:  migrations.Finance(),
		Retention:   retentionRun(),
		Commands:    append(cmds, e.reconcileCommand()),
	}
}
