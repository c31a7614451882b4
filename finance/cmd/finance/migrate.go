package main

import (
	"errors"
	"fmt"
	"io"

	"handoff/migrations"
	"handoff/pkg/integrationkit/pgdb"
)

func migrate(cfg config, args []string, stdout io.Writer) (err error) {
	if len(args) != 1 {
		return errUsage
	}
	m, err := pgdb.NewMigrator(cfg.DatabaseURL, migrations.Finance())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	switch args[0] {
	case "up":
		return m.Up()
	case "down":
		return m.Down()
	case "version":
		v, dirty, err := m.Version()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%d dirty=%t\n", v, dirty)
		return err
	default:
		return fmt.Errorf("unknown migrate command %q: %w", args[0], errUsage)
	}
}
