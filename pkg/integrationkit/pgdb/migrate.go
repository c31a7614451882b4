package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// Migrator applies the migrations embedded in a service binary to its database.
// golang-migrate holds a PostgreSQL advisory lock while it runs, so replicas that start
// together apply each migration once.
type Migrator struct {
	m *migrate.Migrate
}

// NewMigrator prepares migrations from src (files named NNN_name.up.sql / .down.sql)
// for the database at url, on a connection of its own that waits for a free slot like
// Open's. Close the migrator when done.
func NewMigrator(url string, src fs.FS) (*Migrator, error) {
	source, err := iofs.New(src, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db := sql.OpenDB(newConnector(cfg))
	driver, err := migratepgx.WithInstance(db, &migratepgx.Config{})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("migration driver: %w", err), db.Close())
	}
	m, err := migrate.NewWithInstance("iofs", source, "pgx5", driver)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Migrator{m: m}, nil
}

// Migrate applies every pending migration of src to the database at url.
func Migrate(url string, src fs.FS) error {
	mg, err := NewMigrator(url, src)
	if err != nil {
		return err
	}
	return errors.Join(mg.Up(), mg.Close())
}

// Up applies every pending migration.
func (mg *Migrator) Up() error {
	if err := mg.m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Down reverts every applied migration.
func (mg *Migrator) Down() error {
	if err := mg.m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// Version returns the applied version (0 when none) and whether it is dirty.
func (mg *Migrator) Version() (uint, bool, error) {
	v, dirty, err := mg.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return v, dirty, err
}

// Close releases the migrator's connection.
func (mg *Migrator) Close() error {
	srcErr, dbErr := mg.m.Close()
	return errors.Join(srcErr, dbErr)
}

// LatestVersion returns the highest migration version in src, which is what a
// database must be at for the binary that embeds src to be ready.
func LatestVersion(src fs.FS) (uint, error) {
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		return 0, fmt.Errorf("read migrations: %w", err)
	}
	var latest uint
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".up.sql") {
			continue
		}
		v, err := strconv.ParseUint(prefix, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %q: version is not a number", e.Name())
		}
		latest = max(latest, uint(v))
	}
	return latest, nil
}

// CheckCurrent returns nil when db answers and its schema is at the latest version
// of src and not dirty: the readiness condition of a service.
func CheckCurrent(ctx context.Context, db *bun.DB, src fs.FS) error {
	want, err := LatestVersion(src)
	if err != nil {
		return err
	}
	var version int64
	var dirty bool
	err = db.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty)
	if err != nil {
		return fmt.Errorf("database not reachable or not migrated: %w", err)
	}
	if dirty || version != int64(want) {
		return fmt.Errorf("schema at version %d (dirty %t), binary needs %d", version, dirty, want)
	}
	return nil
}
