// Package pgtest gives each test a fresh PostgreSQL database cloned from a template
// that was migrated once per migration set, so tests run in parallel against the real
// server without sharing state.
//
// The server is the one at TEST_DATABASE_URL (a URL of any database on it, used for
// administration), by default postgres://postgres@127.0.0.1:5432/postgres. It may be
// shared with other suites: every connection pgtest makes, and every pool NewDB opens,
// waits for a free slot when the server has none (pgdb.WaitForSlot), and a test's pool
// holds at most MaxConns connections.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// MaxConns is the most connections the pool of NewDB opens; a test racing requests
// against each other has them take turns on these. `make test` runs two packages and
// two tests in each at a time, so its unit tests hold at most four times this, plus
// one short-lived admin connection per test creating or dropping a database.
const MaxConns = 6

// DefaultAdminURL is used when TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL tests use to create and drop databases.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

var templates sync.Map // template name -> *sync.Once-guarded result

type templateResult struct {
	once sync.Once
	err  error
}

// NewURL creates a fresh database migrated with src and returns its URL; the database
// is dropped when the test ends. name is a short label of the migration set.
func NewURL(t testing.TB, name string, src fs.FS) string {
	t.Helper()
	ctx := context.Background()
	tmpl, err := templateName(name, src)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	r, _ := templates.LoadOrStore(tmpl, &templateResult{})
	res := r.(*templateResult)
	res.once.Do(func() { res.err = ensureTemplate(ctx, tmpl, src) })
	if res.err != nil {
		t.Fatalf("pgtest: template %s: %v", tmpl, res.err)
	}

	return create(t, name, tmpl)
}

// NewEmptyURL creates a fresh database without any table and returns its URL; the
// database is dropped when the test ends. A test that a binary refuses to start
// without touching its database checks this one afterwards.
func NewEmptyURL(t testing.TB, name string) string {
	t.Helper()
	return create(t, name, "template0")
}

// create makes a database named after name from the template tmpl, dropped when the
// test ends, and returns its URL.
func create(t testing.TB, name, tmpl string) string {
	t.Helper()
	dbName, err := createDatabase(context.Background(), name, tmpl)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(context.Background(), dbName); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return withDatabase(AdminURL(), dbName)
}

// createDatabase makes a database named after name from the template tmpl and
// returns its name.
func createDatabase(ctx context.Context, name, tmpl string) (string, error) {
	dbName := "t_" + name + "_" + randomHex(8)
	if err := adminExec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`,
		pgx.Identifier{dbName}.Sanitize(), pgx.Identifier{tmpl}.Sanitize())); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return dbName, nil
}

func dropDatabase(ctx context.Context, dbName string) error {
	err := adminExec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pgx.Identifier{dbName}.Sanitize()))
	if err != nil {
		return fmt.Errorf("drop database %s: %w", dbName, err)
	}
	return nil
}

// NewDB is NewURL plus an open bun database, closed when the test ends.
func NewDB(t testing.TB, name string, src fs.FS) (*bun.DB, string) {
	t.Helper()
	u := NewURL(t, name, src)
	db, err := pgdb.Open(context.Background(), u, MaxConns)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, u
}

// templateName derives a name from the migration files' content, so a changed
// migration gets a new template instead of a stale one.
func templateName(name string, src fs.FS) (string, error) {
	h := sha256.New()
	var files []string
	err := fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read migrations: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := fs.ReadFile(src, f)
		if err != nil {
			return "", fmt.Errorf("read migrations: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return "tmpl_" + name + "_" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// ensureTemplate creates and migrates the template once across every test process:
// an advisory lock serialises creators, and the template is renamed into place only
// after its migrations succeeded.
func ensureTemplate(ctx context.Context, tmpl string, src fs.FS) error {
	conn, err := adminConnect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('pgtest:' || $1))`, tmpl); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tmpl).Scan(&exists); err != nil {
		return fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return nil
	}
	building := tmpl + "_wip"
	if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pgx.Identifier{building}.Sanitize())); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, pgx.Identifier{building}.Sanitize())); err != nil {
		return err
	}
	if err := pgdb.Migrate(withDatabase(AdminURL(), building), src); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`,
		pgx.Identifier{building}.Sanitize(), pgx.Identifier{tmpl}.Sanitize()))
	return err
}

// Connect opens one connection to url for a test's own queries, waiting for a free
// slot like every connection pgtest makes.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	return pgdb.WaitForSlot(ctx, func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, url) })
}

// adminConnect connects to the admin database, waiting for a free slot: many test
// packages run at once, other suites may share the server, and a slot frees as soon
// as one of their tests ends.
func adminConnect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := Connect(ctx, AdminURL())
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", redact(AdminURL()), err)
	}
	return conn, nil
}

// adminExec runs one statement on an admin connection of its own. CREATE DATABASE
// fails with object_in_use (55006) while another session is connected to its template
// (autovacuum, another suite's tool looking at it); such a session does not stay, so
// the statement is tried again for up to a minute.
func adminExec(ctx context.Context, sql string) error {
	conn, err := adminConnect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err = conn.Exec(ctx, sql)
		if pgdb.Code(err) != pgdb.CodeObjectInUse || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad TEST_DATABASE_URL: %v", err))
	}
	u.Path = "/" + db
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
