package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/command/commandtest"
)

const (
	testSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	testTokens = "warehouse:0123456789abcdef"
)

// env renders vars as the NAME=value entries run reads.
func env(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(env(map[string]string{"WEBHOOK_SECRET": testSecret, "API_TOKENS": testTokens}), "serve")
	require.NoError(t, err)
	require.Equal(t, defaultDatabaseURL, cfg.DatabaseURL)
	require.Equal(t, "127.0.0.1:8082", cfg.HTTPAddr)
	require.True(t, cfg.MigrateOnStart)
	require.Equal(t, 20, cfg.DBMaxConns)
	require.Equal(t, 10*time.Second, cfg.ShutdownGrace)
	require.Equal(t, 500, cfg.BatchMaxItems)
	require.Len(t, cfg.WebhookKeys, 1)
	require.Equal(t, map[string]int{"warehouse": 1}, cfg.Tokens.Roles())
	require.Equal(t, 90*24*time.Hour, cfg.Retention.ProcessedAge)
}

func TestParseConfigReadsEveryVariable(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(env(map[string]string{
		"DATABASE_URL":     "postgresql://u@db:5432/logistics",
		"HTTP_ADDR":        ":9000",
		"API_TOKENS":       "warehouse:0123456789abcdef,clerk:fedcba9876543210",
		"WEBHOOK_SECRET":   testSecret + "," + testSecret,
		"MIGRATE_ON_START": "false",
		"DB_MAX_CONNS":     "5",
		"SHUTDOWN_GRACE":   "3s",
		"BATCH_MAX_ITEMS":  "100",
	}), "serve")
	require.NoError(t, err)
	require.Equal(t, "postgresql://u@db:5432/logistics", cfg.DatabaseURL)
	require.Equal(t, ":9000", cfg.HTTPAddr)
	require.Equal(t, map[string]int{"warehouse": 1, "clerk": 1}, cfg.Tokens.Roles())
	require.Len(t, cfg.WebhookKeys, 2)
	require.False(t, cfg.MigrateOnStart)
	require.Equal(t, 5, cfg.DBMaxConns)
	require.Equal(t, 3*time.Second, cfg.ShutdownGrace)
	require.Equal(t, 100, cfg.BatchMaxItems)
}

func TestParseConfigNamesTheInvalidVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, variable, value, want string
	}{
		{"secret required by serve", "WEBHOOK_SECRET", "", "required by serve"},
		{"secret without prefix", "WEBHOOK_SECRET", "c2VjcmV0", "whsec_"},
		{"secret too short", "WEBHOOK_SECRET", "whsec_c2hvcnQ=", "at least 24 bytes"},
		{"secret of zeros", "WEBHOOK_SECRET", "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "8 different byte values"},
		{"tokens required by serve", "API_TOKENS", "", "required by serve"},
		{"token shared by two roles", "API_TOKENS", "warehouse:0123456789abcdef,ops:0123456789abcdef", "have the same token"},
		{"token of one character", "API_TOKENS", "warehouse:zzzzzzzzzzzzzzzzzzzzzzzz", "fewer than 8 different characters"},
		{"database scheme", "DATABASE_URL", "mysql://db/logistics", "postgres://"},
		{"listen address", "HTTP_ADDR", "8082", "want host:port"},
		{"token role", "API_TOKENS", "admin:0123456789abcdef", "unknown role"},
		{"short token", "API_TOKENS", "warehouse:short", "shorter than 16"},
		{"migrate flag", "MIGRATE_ON_START", "sometimes", "true or false"},
		{"pool size", "DB_MAX_CONNS", "0", "1 to 1000"},
		{"pool above the ceiling", "DB_MAX_CONNS", "1000000", "1 to 1000"},
		{"grace", "SHUTDOWN_GRACE", "soon", "want a duration"},
		{"grace below the floor", "SHUTDOWN_GRACE", "1ns", "below the floor of 1s"},
		{"batch items", "BATCH_MAX_ITEMS", "0", "at least 1"},
		{"retention below the floor", "RETENTION_PROCESSED_AGE", "1h", "below the floor of 24h"},
		{"retention schedule", "RETENTION_SCHEDULE", "at three", "cron spec"},
		{"unknown retention variable", "RETENTION_PROCESSED", "1h", "did you mean RETENTION_PROCESSED_AGE?"},
		{"unknown webhook variable", "WEBHOOK_SECRETS", "x", "did you mean WEBHOOK_SECRET?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"WEBHOOK_SECRET": testSecret, "API_TOKENS": testTokens}
			vars[tt.variable] = tt.value
			_, err := parseConfig(env(vars), "serve")
			commandtest.RequireOneProblem(t, err, tt.variable, tt.want)
			if tt.variable == "WEBHOOK_SECRET" && tt.value != "" {
				require.NotContains(t, err.Error(), strings.TrimPrefix(tt.value, "whsec_"), "the secret is never repeated")
			}
		})
	}
}

func TestParseConfigReportsEveryProblemOnOneLine(t *testing.T) {
	t.Parallel()
	_, err := parseConfig(env(map[string]string{"HTTP_ADDR": "x", "DB_MAX_CONNS": "-1"}), "serve")
	require.Error(t, err)
	msg := err.Error()
	require.NotContains(t, msg, "\n")
	for _, v := range []string{"HTTP_ADDR", "DB_MAX_CONNS", "WEBHOOK_SECRET", "API_TOKENS"} {
		require.True(t, strings.Contains(msg, v+": "), "%s missing from %q", v, msg)
	}
}

func TestMigrateDoesNotNeedTheSecrets(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"migrate", "retention", "healthcheck"} {
		_, err := parseConfig(nil, command)
		require.NoError(t, err, command)
	}
}

func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(env(map[string]string{
		"API_TOKENS_FILE":     commandtest.SecretFile(t, testTokens+"\n"),
		"WEBHOOK_SECRET_FILE": commandtest.SecretFile(t, testSecret+"\n"),
		"DATABASE_URL_FILE":   commandtest.SecretFile(t, "postgres://logistics:pw@db:5432/logistics\n"),
	}), "serve")
	require.NoError(t, err)
	require.Equal(t, map[string]int{"warehouse": 1}, cfg.Tokens.Roles())
	require.Len(t, cfg.WebhookKeys, 1)
	require.Equal(t, "postgres://logistics:pw@db:5432/logistics", cfg.DatabaseURL)

	_, err = parseConfig(env(map[string]string{"API_TOKENS": testTokens, "WEBHOOK_SECRET": testSecret,
		"WEBHOOK_SECRET_FILE": commandtest.SecretFile(t, testSecret)}), "serve")
	require.EqualError(t, err, "invalid configuration: WEBHOOK_SECRET: set WEBHOOK_SECRET or WEBHOOK_SECRET_FILE, not both")
}

func TestHelpSaysTheFloors(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help"}, nil, &out, io.Discard))
	require.Contains(t, out.String(), "  SHUTDOWN_GRACE                   how long serve waits for requests in flight on shutdown\n"+
		"                                   (default 10s; at least 1s)\n")
	require.Contains(t, out.String(), "  WEBHOOK_SECRET_FILE              the file to read WEBHOOK_SECRET from instead\n")
	require.Contains(t, out.String(), "  OTEL_SERVICE_NAME                service.name of every span (default logistics)\n")
}
