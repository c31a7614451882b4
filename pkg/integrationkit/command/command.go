// Package command is the skeleton every handoff binary's command line is built on:
// main hands its run function to Main, run declares a Binary — its name, usage,
// configuration and own commands — and Binary.Run adds the commands every service
// has, built here once: `migrate up|down|version`, `retention run`, `healthcheck`,
// `version` and `help --json`. Each reads the binary's configuration for its own
// first word, as the binary's commands do, so the same variables are required, and
// the same mistakes refused, whichever binary runs it.
package command

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/envconf"
)

// RunFunc is the run of a binary: it executes the command line args with the
// environment environ ("NAME=value" entries), writing its result to stdout and its
// progress and logs to stderr, and returns when the command is done or, for a
// server, after ctx ends and everything has drained.
type RunFunc func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error

// Main is a binary's main: it calls run with the process's arguments, environment
// and output under a context that ends on SIGINT or SIGTERM, and exits with the
// status cli.Status gives run's error, which it reports on stderr as "<name>: …".
func Main(name string, run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Status(name, err, os.Stderr))
}

// Binary declares a service binary's command line, configured by a C. Every field is
// required: Run adds the standard commands, which use them, to Commands.
type Binary[C any] struct {
	// Name is the binary's name, such as "finance".
	Name string
	// Usage is the binary's usage, printed after a mistake in the first word; `help`
	// prints it followed by the variables of Settings.
	Usage string
	// Settings declares every variable the binary reads (into a config nobody reads):
	// `help` and `help --json` print them.
	Settings envconf.Set
	// Load reads the configuration a command runs with; command is the command
	// line's first word, for the variables only some commands require.
	Load func(command string) (C, error)
	// Stdout gets a command's result; Stderr its progress and logs.
	Stdout, Stderr io.Writer
	// HTTPAddr is the listen address in a configuration; healthcheck asks its /readyz.
	HTTPAddr func(cfg C) string
	// DatabaseURL is the binary's own database in a configuration, which migrate and
	// retention run use.
	DatabaseURL func(cfg C) string
	// Migrations are the binary's migrations, which migrate applies.
	Migrations fs.FS
	// Retention is what retention run runs.
	Retention Retention[C]
	// Commands are the binary's own commands, such as serve.
	Commands []cli.Command
}

// Run executes the command line args. `help --json` prints Settings as JSON (README's
// configuration table is made from it); a command line asking for help prints it to
// Stdout and runs nothing; a mistake on it is a *cli.UsageError (exit status 2), found
// before the configuration is read.
func (b Binary[C]) Run(ctx context.Context, args []string) error {
	if len(args) == 2 && args[0] == "help" && args[1] == "--json" {
		return envconf.WriteJSON(b.Stdout, b.Settings.Program(b.Name))
	}
	call, err := b.Program().Parse(args)
	if err != nil {
		return err
	}
	if call.Help != "" {
		_, err := io.WriteString(b.Stdout, call.Help)
		return err
	}
	return call.Run(ctx)
}

// Program returns the binary's commands followed by the standard ones.
func (b Binary[C]) Program() cli.Program {
	cmds := append([]cli.Command(nil), b.Commands...)
	cmds = append(cmds, b.migrateCommands()...)
	cmds = append(cmds, b.retentionCommand(), b.healthcheckCommand(), b.versionCommand())
	return cli.Program{Name: b.Name, Usage: b.Usage, Help: b.Usage + b.Settings.Help(), Commands: cmds}
}

// configured returns a runner that loads the configuration for command and calls f
// with it.
func (b Binary[C]) configured(command string, f func(ctx context.Context, cfg C) error) cli.Runner {
	return func(ctx context.Context, _ []string) error {
		cfg, err := b.Load(command)
		if err != nil {
			return err
		}
		return f(ctx, cfg)
	}
}
