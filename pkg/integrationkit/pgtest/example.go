package pgtest

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// ForExample creates a fresh database holding what ddl creates (a kit package's
// Schema, and the example's own tables) and opens it, for a runnable example, which
// has no testing.TB to clean up after it: done closes the pool and drops the
// database. The server is the tests' (AdminURL). ForExample panics when it cannot
// make the database: the examples, like every test of the kit, need PostgreSQL.
func ForExample(name, ddl string) (db *bun.DB, done func()) {
	ctx := context.Background()
	dbName, err := createDatabase(ctx, "ex_"+name, "template0")
	if err != nil {
		panic(fmt.Sprintf("pgtest: the examples need PostgreSQL at TEST_DATABASE_URL: %v", err))
	}
	drop := func() {
		if err := dropDatabase(ctx, dbName); err != nil {
			panic(fmt.Sprintf("pgtest: %v", err))
		}
	}
	db, err = pgdb.Open(ctx, withDatabase(AdminURL(), dbName), MaxConns)
	if err == nil {
		_, err = db.DB.ExecContext(ctx, ddl) // as is: bun would read ? as a placeholder
		if err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		drop()
		panic(fmt.Sprintf("pgtest: example database %s: %v", name, err))
	}
	return db, func() {
		_ = db.Close()
		drop()
	}
}
