package command_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/retention"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// config is the configuration of the binary under test.
type config struct{ DatabaseURL, HTTPAddr string }

func (c *config) settings() envconf.Set {
	return envconf.Set{Settings: []envconf.Setting{
		envconf.String(&c.DatabaseURL, "DATABASE_URL", "postgres://127.0.0.1:1/none", "the database", envconf.PostgresURL),
		envconf.String(&c.HTTPAddr, "HTTP_ADDR", "127.0.0.1:1", "listen address", envconf.HostPort),
	}}
}

// migrationsFS holds one migration: the table things.
var migrationsFS = fstest.MapFS{
	"000001_things.up.sql":   {Data: []byte(`CREATE TABLE things (id bigint PRIMARY KEY);`)},
	"000001_things.down.sql": {Data: []byte(`DROP TABLE things;`)},
}

// bundle is a binary called svc whose retention task reports 3 rows after one batch.
type bundle struct {
	svc            command.Binary[config]
	stdout, stderr *bytes.Buffer
	loaded         []string // the commands the configuration was loaded for
}

func setup(t *testing.T, environ []string) *bundle {
	t.Helper()
	b := &bundle{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	b.svc = command.Binary[config]{
		Name: "svc", Usage: "Usage: svc <command>\n\n", Settings: (&config{}).settings(),
		Load: func(cmd string) (config, error) {
			b.loaded = append(b.loaded, cmd)
			var c config
			return c, c.settings().Load(environ, cmd)
		},
		Stdout: b.stdout, Stderr: b.stderr,
		HTTPAddr:    func(c config) string { return c.HTTPAddr },
		DatabaseURL: func(c config) string { return c.DatabaseURL },
		Migrations:  migrationsFS,
		Retention: command.Retention[config]{Summary: "purge things now", Help: "Purge the things now.",
			New: func(db *bun.DB, _ config) (*retention.Runner, error) {
				return retention.New(db, retention.Config{Lock: "svc:retention", Tasks: []retention.Task{{
					Name: "things", Run: func(ctx context.Context, _ bun.IDB) (int64, error) { return 3, nil }}}})
			}},
		Commands: []cli.Command{{Name: "serve", Summary: "serve", Run: func(context.Context, []string) error { return nil }}},
	}
	return b
}

// The standard commands follow the binary's own, each answering --help with its
// usage; the summaries name the binary where they differ between binaries.
func TestProgramAddsTheStandardCommands(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var names []string
	for _, c := range b.svc.Program().Commands {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"serve", "migrate up", "migrate down", "migrate version", "retention run",
		"healthcheck", "version"}, names)

	require.NoError(t, b.svc.Run(context.Background(), []string{"migrate", "--help"}))
	require.Contains(t, b.stdout.String(), "  down     revert every migration (drops the svc tables)\n")
	b.stdout.Reset()
	require.NoError(t, b.svc.Run(context.Background(), []string{"help", "retention", "run"}))
	require.Equal(t, "Usage: svc retention run\n\nPurge the things now.\n", b.stdout.String())
	b.stdout.Reset()
	require.NoError(t, b.svc.Run(context.Background(), []string{"help"}))
	require.True(t, strings.HasPrefix(b.stdout.String(), "Usage: svc <command>\n\nEnvironment:\n"), b.stdout.String())
	require.Empty(t, b.loaded, "help reads no configuration")

	err := b.svc.Run(context.Background(), []string{"version", "1"})
	require.ErrorAs(t, err, new(*cli.UsageError))
	require.Equal(t, 2, cli.Status("svc", err, io.Discard))
}

// svc passes the suite every binary runs: help, help --json, version and healthcheck
// as its users see them.
func TestSuite(t *testing.T) {
	t.Parallel()
	readme := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("| `DATABASE_URL` | `HTTP_ADDR` |\n"), 0o600))
	run := func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		svc := setup(t, environ).svc
		svc.Stdout, svc.Stderr = stdout, stderr
		return svc.Run(ctx, args)
	}
	commandtest.Suite(t, commandtest.Binary{Name: "svc", Run: run, Settings: (&config{}).settings(), README: readme})
}

// version and help read no configuration; healthcheck reads it for its own word.
func TestWhichCommandsLoadTheConfiguration(t *testing.T) {
	t.Parallel()
	b := setup(t, []string{"HTTP_ADDR=" + commandtest.ReadyServer(t, nil)})
	require.NoError(t, b.svc.Run(context.Background(), []string{"version"}))
	require.NoError(t, b.svc.Run(context.Background(), []string{"help", "--json"}))
	require.Empty(t, b.loaded)
	require.NoError(t, b.svc.Run(context.Background(), []string{"healthcheck"}))
	require.Equal(t, []string{"healthcheck"}, b.loaded)
}

// An invalid configuration stops a standard command before it does anything, with
// the error Load gave (exit status 1, not 2).
func TestInvalidConfigurationStopsTheCommand(t *testing.T) {
	t.Parallel()
	b := setup(t, []string{"DATABASE_URL=mysql://x"})
	err := b.svc.Run(context.Background(), []string{"migrate", "up"})
	require.ErrorContains(t, err, "DATABASE_URL")
	require.Equal(t, 1, cli.Status("svc", err, io.Discard))
	require.Equal(t, []string{"migrate"}, b.loaded)
	require.Empty(t, b.stdout.String())
}

func TestMigrateUpDownVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, []string{"DATABASE_URL=" + pgtest.NewEmptyURL(t, "command")})
	migrate := func(verb string) string {
		b.stdout.Reset()
		require.NoError(t, b.svc.Run(context.Background(), []string{"migrate", verb}))
		return b.stdout.String()
	}
	require.Equal(t, "version 0 dirty false\n", migrate("version"))
	require.Equal(t, "version 1 dirty false\n", migrate("up"))
	require.Equal(t, "version 1 dirty false\n", migrate("version"))
	require.Equal(t, "version 0 dirty false\n", migrate("down"))
}

func TestRetentionRunPrintsProgressAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, []string{"DATABASE_URL=" + pgtest.NewEmptyURL(t, "command")})
	require.NoError(t, b.svc.Run(context.Background(), []string{"retention", "run"}))
	require.Equal(t, "things                       3\n", b.stdout.String())
	require.Equal(t, "retention: things: started\n", b.stderr.String(), "a task without About says it started")
	require.Equal(t, []string{"retention"}, b.loaded)
}
