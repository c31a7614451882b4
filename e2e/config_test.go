package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/pgtest"
)

// badConfig is one invalid configuration of `<binary> serve` and the variables its
// one line of stderr must name.
type badConfig struct {
	binary string
	vars   map[string]string
	names  []string
}

// bad is the configuration of binary with name=value on top of a valid one.
func bad(binary, name, value string) badConfig {
	return badConfig{binary: binary, vars: map[string]string{name: value}, names: []string{name}}
}

// badConfigs are every refused setting, for both binaries. maxConns is the server's
// max_connections: a pool one above it passes the parse and is refused after
// connecting, still before anything is migrated.
func badConfigs(maxConns int) []badConfig {
	weakSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("only-16-bytes-ok"))
	zeroSecret := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	cases := []badConfig{
		bad("finance", "DB_MAX_CONNS", strconv.Itoa(maxConns-4)), // with the dispatcher's 5: one above
		bad("logistics", "DB_MAX_CONNS", strconv.Itoa(maxConns+1)),
		{binary: "finance", vars: map[string]string{"API_TOKENS": "", "DISPATCH_BACKOFF": "1ns"},
			names: []string{"API_TOKENS", "DISPATCH_BACKOFF"}},
		{binary: "finance", vars: map[string]string{"API_TOKENS_FILE": "/nonexistent/tokens"},
			names: []string{"API_TOKENS"}}, // set with API_TOKENS
		{binary: "finance", vars: map[string]string{"API_TOKENS": "", "API_TOKENS_FILE": "/nonexistent/tokens"},
			names: []string{"API_TOKENS_FILE"}},
		{binary: "finance", vars: map[string]string{"DATABASE_URL_FILE": "/nonexistent/url"},
			names: []string{"DATABASE_URL"}}, // set with DATABASE_URL
		{binary: "finance", vars: map[string]string{"LOGISTICS_OPS_TOKEN": harness.OpsToken, "LOGISTICS_OPS_TOKEN_FILE": "/x"},
			names: []string{"LOGISTICS_OPS_TOKEN"}},
		{binary: "finance", vars: map[string]string{"SLACK_TOKEN": "xoxb-1", "SLACK_CHANNEL": "#c", "SLACK_TOKEN_FILE": "/x"},
			names: []string{"SLACK_TOKEN"}},
		{binary: "logistics", vars: map[string]string{"WEBHOOK_SECRET": "", "WEBHOOK_SECRET_FILE": "/nonexistent/secret"},
			names: []string{"WEBHOOK_SECRET_FILE"}},
	}
	for _, binary := range []string{"finance", "logistics"} {
		cases = append(cases,
			bad(binary, "API_TOKENS", ""),
			bad(binary, "API_TOKENS", "clerk:"+harness.ClerkToken+",ops:"+harness.ClerkToken),
			bad(binary, "API_TOKENS", "clerk:short-token"),
			bad(binary, "API_TOKENS", "clerk:"+strings.Repeat("a", 24)),
			bad(binary, "API_TOKENS", "clerk:"+strings.Repeat("ab  ", 6)),
			bad(binary, "WEBHOOK_SECRET", weakSecret),
			bad(binary, "WEBHOOK_SECRET", zeroSecret),
			bad(binary, "DB_MAX_CONNS", "1000000"),
			bad(binary, "HTTP_ADDR", "abc"),
			bad(binary, "WEBHOOK_SECRETS", "x"),
			bad(binary, "API_TOKEN", "x"),
			bad(binary, "DB_MAX_CONN", "4"),
			bad(binary, "HTTP_ADR", "127.0.0.1:1"),
			bad(binary, "MIGRATE_ON_STARTUP", "false"),
			bad(binary, "RETENTION_BATCHES", "10"),
		)
	}
	for name, value := range map[string]string{
		"DISPATCH_BACKOFF": "1ns", "DISPATCH_INTERVAL": "1ns", "DISPATCH_TIMEOUT": "1ns", "DISPATCH_LEASE": "5s",
		"BREAKER_COOLDOWN": "1ns", "ALERT_REPEAT": "1ns", "ALERT_GATHER": "1ns", "ALERT_PENDING_AGE": "1ns",
		"RECONCILE_WINDOW": "1ns", "RECONCILE_OVERDUE": "1ns", "RETENTION_OUTBOX_AGE": "1ns",
		"RETENTION_ARCHIVE_AGE": "24h", "RETENTION_IDEMPOTENCY_AGE": "1h",
		"LOGISTICS_API_URL":     "http://ops:secret@127.0.0.1:8082",
		"LOGISTICS_WEBHOOK_URL": "http://svc:secret@127.0.0.1:8082/webhooks/finance",
		"SLACK_WEBHOOK_URL":     "https://u:secret@hooks.slack.com/services/x",
		"SLACK_API_URL":         "https://bot:secret@slack.com/api/",
		"DASHBOARD_URL":         "https://admin:secret@ops.example/ops/",
		"DISPATCH_BACKOF":       "1s", "BREAKER_TRESHOLD": "3", "ALERT_REPAET": "1m", "SLACK_CHANEL": "#c",
		"LOGISTICS_OPS_TOKN": "x", "RECONCILE_WINDW": "1h",
	} {
		cases = append(cases, bad("finance", name, value))
	}
	cases = append(cases, badConfig{binary: "finance", vars: map[string]string{"RECONCILE_WINDOW": "9000h"},
		names: []string{"RECONCILE_WINDOW"}})
	for name, value := range map[string]string{
		"SHUTDOWN_GRACE": "1ns", "RETENTION_PROCESSED_AGE": "1h", "RETENTION_PROCESSED": "1h", "BATCH_MAX_ITEM": "5",
	} {
		cases = append(cases, bad("logistics", name, value))
	}
	return cases
}

// Every refused setting against the real binaries: `serve` exits 1 with exactly one
// line on stderr naming the variable(s), having migrated nothing (its fresh, empty
// database has no table afterwards, schema_migrations included) and listened on
// nothing (the test holds HTTP_ADDR's port, so a binary that got as far as its
// listener would fail on that instead, after logging).
func TestInvalidConfigurationStopsServeBeforeAnything(t *testing.T) {
	t.Parallel()
	bin := harness.Binaries(t)
	maxConns := query[int](t, pgtest.AdminURL(), `SELECT current_setting('max_connections')::int`)
	require.Less(t, maxConns, 1000, "the test needs a pool above max_connections that passes the parse")
	for _, tc := range badConfigs(maxConns) {
		t.Run(tc.binary+"/"+strings.Join(tc.names, "+")+"="+tc.vars[tc.names[0]], func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmptyURL(t, "config")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = ln.Close() })
			env := map[string]string{
				"DATABASE_URL":   db,
				"HTTP_ADDR":      ln.Addr().String(),
				"API_TOKENS":     "clerk:" + harness.ClerkToken + ",ops:" + harness.OpsToken + ",warehouse:" + harness.WarehouseToken,
				"WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(harness.SecretKey),
				"DB_MAX_CONNS":   "4",
			}
			for k, v := range tc.vars {
				env[k] = v
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, tc.binary), "serve")
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()

			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v; stderr: %s", err, stderr.String())
			require.Equal(t, 1, exit.ExitCode(), stderr.String())
			require.Empty(t, stdout.String())
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			require.Len(t, lines, 1, "one line: %s", stderr.String())
			require.True(t, strings.HasPrefix(lines[0], tc.binary+": invalid configuration: "), lines[0])
			for _, name := range tc.names {
				require.Contains(t, lines[0], " "+name+": ")
			}
			require.NotContains(t, lines[0], "secret@", "credentials are never echoed")
			require.Equal(t, 0, query[int](t, db, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`), "nothing migrated")
			require.False(t, query[bool](t, db, `SELECT to_regclass('schema_migrations') IS NOT NULL`))
		})
	}
}
