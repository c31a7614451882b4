package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/pgdb"
)

// migrateCommands are `finance migrate up|down|version`.
func (e env) migrateCommands() []cli.Command {
	return []cli.Command{
		{Name: "migrate up", Summary: "apply every pending migration", Run: e.migrate("up")},
		{Name: "migrate down", Summary: "revert every migration (drops the finance tables)", Run: e.migrate("down")},
		{Name: "migrate version", Summary: "print the applied migration version", Run: e.migrate("version")},
	}
}

func (e env) migrate(cmd string) cli.Runner {
	return func(_ context.Context, _ []string) error {
		cfg, err := e.config("migrate")
		if err != nil {
			return err
		}
		return migrate(cfg, cmd, e.stdout)
	}
}

func migrate(cfg config, cmd string, stdout io.Writer) (err error) {
	m, err := pgdb.NewMigrator(cfg.DatabaseURL, migrations.Finance())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	switch cmd {
	case "up":
		return m.Up()
	case "down":
		return m.Down()
	}
	v, dirty, err := m.Version()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d dirty=%t\n", v, dirty)
	return err
}
