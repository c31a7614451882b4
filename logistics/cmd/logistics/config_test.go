package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(env(map[string]string{"WEBHOOK_SECRET": testSecret}), true)
	require.NoError(t, err)
	require.Equal(t, defaultDatabaseURL, cfg.DatabaseURL)
	require.Equal(t, "127.0.0.1:8082", cfg.HTTPAddr)
	require.True(t, cfg.MigrateOnStart)
	require.Equal(t, 20, cfg.DBMaxConns)
	require.Equal(t, 10*time.Second, cfg.ShutdownGrace)
	require.Equal(t, 500, cfg.BatchMaxItems)
	require.Len(t, cfg.WebhookKeys, 1)
	require.Empty(t, cfg.Tokens.Roles())
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
	}), true)
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
		name, variable, value string
		needSecret            bool
	}{
		{"secret required by serve", "WEBHOOK_SECRET", "", true},
		{"secret without prefix", "WEBHOOK_SECRET", "c2VjcmV0", false},
		{"secret too short", "WEBHOOK_SECRET", "whsec_c2hvcnQ=", true},
		{"database scheme", "DATABASE_URL", "mysql://db/logistics", true},
		{"listen address", "HTTP_ADDR", "8082", true},
		{"token role", "API_TOKENS", "admin:0123456789abcdef", true},
		{"short token", "API_TOKENS", "warehouse:short", true},
		{"migrate flag", "MIGRATE_ON_START", "sometimes", true},
		{"pool size", "DB_MAX_CONNS", "0", true},
		{"grace", "SHUTDOWN_GRACE", "soon", true},
		{"batch items", "BATCH_MAX_ITEMS", "0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"WEBHOOK_SECRET": testSecret}
			vars[tt.variable] = tt.value
			_, err := parseConfig(env(vars), tt.needSecret)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.variable)
			require.NotContains(t, err.Error(), "\n", "one line")
			if tt.variable == "WEBHOOK_SECRET" && tt.value != "" {
				require.NotContains(t, err.Error(), tt.value, "the secret is never repeated")
			}
		})
	}
}

func TestParseConfigReportsEveryProblemOnOneLine(t *testing.T) {
	t.Parallel()
	_, err := parseConfig(env(map[string]string{"HTTP_ADDR": "x", "DB_MAX_CONNS": "-1"}), true)
	require.Error(t, err)
	msg := err.Error()
	require.NotContains(t, msg, "\n")
	for _, v := range []string{"HTTP_ADDR", "DB_MAX_CONNS", "WEBHOOK_SECRET"} {
		require.True(t, strings.Contains(msg, v), "%s missing from %q", v, msg)
	}
}

func TestMigrateDoesNotNeedTheSecret(t *testing.T) {
	t.Parallel()
	_, err := parseConfig(env(nil), false)
	require.NoError(t, err)
}
