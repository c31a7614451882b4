package command

import (
	"context"
	"errors"
	"fmt"

	"handoff/pkg/integrationkit/buildinfo"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/pgdb"
)

// healthcheckCommand is `healthcheck`: one GET of /readyz at HTTP_ADDR.
func (b Binary[C]) healthcheckCommand() cli.Command {
	return cli.Command{Name: "healthcheck", Summary: "exit 0 when the server at HTTP_ADDR answers /readyz",
		Help: "Exit 0 when the server at HTTP_ADDR answers /readyz, 1 otherwise: the container\n" +
			"healthcheck (the image has no curl).",
		Run: b.configured("healthcheck", func(ctx context.Context, cfg C) error {
			return httpserver.Healthcheck(ctx, b.HTTPAddr(cfg))
		})}
}

// versionCommand is `version`, which reads no configuration: a binary answers it where
// serve would refuse to start.
func (b Binary[C]) versionCommand() cli.Command {
	return cli.Command{Name: "version", Summary: "print the build: module version, VCS revision, Go version",
		Run: func(context.Context, []string) error { return buildinfo.Print(b.Stdout, b.Name) }}
}

// migrateCommands are `migrate up|down|version`; each prints the version it leaves.
func (b Binary[C]) migrateCommands() []cli.Command {
	cmd := func(verb, summary string) cli.Command {
		return cli.Command{Name: "migrate " + verb, Summary: summary,
			Run: b.configured("migrate", func(_ context.Context, cfg C) error { return b.migrate(verb, cfg) })}
	}
	return []cli.Command{
		cmd("up", "apply every pending migration"),
		cmd("down", "revert every migration (drops the "+b.Name+" tables)"),
		cmd("version", "print the applied migration version"),
	}
}

// migrate applies verb (up, down, or version: nothing) to the database of cfg and
// prints the version it is at: "version N dirty false".
func (b Binary[C]) migrate(verb string, cfg C) (err error) {
	m, err := pgdb.NewMigrator(b.DatabaseURL(cfg), b.Migrations)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	switch verb {
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
	_, err = fmt.Fprintf(b.Stdout, "version %d dirty %t\n", v, dirty)
	return err
}
