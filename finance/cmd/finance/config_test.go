package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/delivery"
)

// environ renders vars as the NAME=value entries run reads.
func environ(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// serveEnv is a valid environment for serve with vars on top.
func serveEnv(vars map[string]string) []string {
	base := map[string]string{
		"API_TOKENS":     "clerk:clerk-token-0123456789",
		"WEBHOOK_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	}
	for k, v := range vars {
		base[k] = v
	}
	return environ(base)
}

// Every rule of finance's configuration, one bad setting at a time: serve refuses
// it before touching anything, with one line that names the variable.
func TestInvalidConfigNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ variable, value, want string }{
		{"DISPATCH_BATCH", "zero", "want an integer at least 1"},
		{"DISPATCH_CONCURRENCY", "-3", "want an integer at least 1"},
		{"DISPATCH_INTERVAL", "soon", "want a duration"},
		{"DISPATCH_INTERVAL", "10ms", "below the floor of 100ms"},
		{"DISPATCH_BACKOFF", "5s,never", "step 2"},
		{"DISPATCH_BACKOFF", "1ns", "below the floor of 50ms"},
		{"DISPATCH_MAX_ATTEMPTS", "0", "at least 1"},
		{"DISPATCH_LEASE", "5s", "must exceed Timeout"},
		{"DISPATCH_LEASE", "1s", "below the floor of 3s"},
		{"DISPATCH_TIMEOUT", "1ns", "below the floor of 1s"},
		{"BREAKER_COOLDOWN", "-1s", "below the floor of 100ms"},
		{"BREAKER_THRESHOLD", "many", "want an integer"},
		{"MIGRATE_ON_START", "maybe", "true or false"},
		{"LOGISTICS_WEBHOOK_URL", "ftp://example.com/x", "absolute http(s) URL"},
		{"LOGISTICS_WEBHOOK_URL", "http://svc:hunter2-secret@127.0.0.1:8082/webhooks/finance", "credentials"},
		{"API_TOKENS", "boss:0123456789abcdef", "unknown role"},
		{"API_TOKENS", "", "required by serve"},
		{"API_TOKENS", ",", "holds no role:token entry"},
		{"API_TOKENS", "clerk:0123456789abcdef,ops:0123456789abcdef", "have the same token"},
		{"API_TOKENS", "clerk:short-token", "shorter than 16"},
		{"API_TOKENS", "clerk:aaaaaaaaaaaaaaaaaaaa", "fewer than 8 different characters"},
		{"WEBHOOK_SECRET", "not-a-secret", "whsec_"},
		{"WEBHOOK_SECRET", "", "required by serve"},
		{"WEBHOOK_SECRET", "whsec_MDEyMzQ1Njc4OWFiY2RlZg==", "at least 24 bytes"},
		{"WEBHOOK_SECRET", "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "8 different byte values"},
		{"DATABASE_URL", "mysql://x", "postgres://"},
		{"DB_MAX_CONNS", "1000000", "1 to 1000"},
		{"HTTP_ADDR", "abc", "want host:port"},
		{"LOG_LEVEL", "loud", "debug, info, warn or error"},
		{"DISPATCH_MODE", "bulk", "want single or batch"},
		{"OUTBOUND_ALLOW", "10.0.0.0/8,169.254.169.254", ""},
		{"TRUSTED_PROXIES", "10.0.0.0/8,0.0.0.0/0", ""},
		{"DISPATCH_BACKOF", "1s", "did you mean DISPATCH_BACKOFF?"},
		{"BREAKER_TRESHOLD", "3", "did you mean BREAKER_THRESHOLD?"},
		{"LOGISTICS_OPS_TOKEN", "short", "shorter than 16"},
	} {
		t.Run(tc.variable+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run(context.Background(), []string{"serve"}, serveEnv(map[string]string{tc.variable: tc.value}), &out, &out)
			commandtest.RequireOneProblem(t, err, tc.variable, tc.want)
			require.NotContains(t, err.Error(), "hunter2", "a password is never echoed")
			require.NotContains(t, err.Error(), "MDEyMzQ1Njc4", "a secret is never echoed")
			require.Empty(t, out.String())
		})
	}
}

func TestEveryProblemOfOneStartIsOnOneLine(t *testing.T) {
	t.Parallel()
	_, err := parseConfig(environ(map[string]string{"HTTP_ADDR": "abc", "DISPATCH_BACKOFF": "1ns", "ALERT_REPEAT": "1ns"}), "serve")
	require.Error(t, err)
	msg := err.Error()
	require.NotContains(t, msg, "\n")
	for _, name := range []string{"HTTP_ADDR: ", "DISPATCH_BACKOFF: ", "ALERT_REPEAT: ", "API_TOKENS: ", "WEBHOOK_SECRET: "} {
		require.Contains(t, msg, name)
	}
	require.Equal(t, 4, strings.Count(msg, "; "), msg)
}

// Commands other than serve need neither tokens nor the webhook secret.
func TestOnlyServeNeedsTheSecrets(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"migrate", "outbox", "retention", "healthcheck"} {
		_, err := parseConfig(nil, command)
		require.NoError(t, err, command)
	}
	_, err := parseConfig(nil, "reconcile")
	require.EqualError(t, err, "invalid configuration: LOGISTICS_OPS_TOKEN: required by reconcile")
}

func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(environ(map[string]string{
		"API_TOKENS_FILE":          commandtest.SecretFile(t, "clerk:clerk-token-0123456789\n"),
		"WEBHOOK_SECRET_FILE":      commandtest.SecretFile(t, "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"),
		"DATABASE_URL_FILE":        commandtest.SecretFile(t, "postgres://finance:pw@db:5432/finance\n"),
		"LOGISTICS_OPS_TOKEN_FILE": commandtest.SecretFile(t, "ops-token-0123456789abc\n"),
		"SLACK_TOKEN_FILE":         commandtest.SecretFile(t, "xoxb-1\n"),
		"SLACK_CHANNEL":            "#oncall",
	}), "serve")
	require.NoError(t, err)
	require.Equal(t, map[string]int{"clerk": 1}, cfg.Tokens.Roles())
	require.Len(t, cfg.WebhookSecrets, 1)
	require.Equal(t, "postgres://finance:pw@db:5432/finance", cfg.DatabaseURL)
	require.Equal(t, "ops-token-0123456789abc", cfg.Oncall.Reconcile.OpsToken)
	require.Equal(t, "xoxb-1", cfg.Oncall.Slack.Token)

	_, err = parseConfig(serveEnv(map[string]string{"API_TOKENS_FILE": commandtest.SecretFile(t, "clerk:clerk-token-0123456789")}), "serve")
	require.EqualError(t, err, "invalid configuration: API_TOKENS: set API_TOKENS or API_TOKENS_FILE, not both")
}

func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, "migrate")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8081", cfg.HTTPAddr)
	require.Equal(t, "http://127.0.0.1:8082/webhooks/finance", cfg.WebhookURL)
	require.Equal(t, 8, cfg.DBMaxConns)
	require.Equal(t, delivery.DefaultBatch, cfg.Dispatch.Batch)
	require.True(t, cfg.MigrateOnStart)
	require.True(t, cfg.DispatchOn)
	require.Equal(t, delivery.ModeBatch, cfg.Dispatch.Mode, "batch mode is the default")
	require.Equal(t, delivery.BatchConcurrency, cfg.Dispatch.Concurrency, "a second batch in flight only for a backlog")
	require.Equal(t, 30*time.Second, cfg.Dispatch.Lease)
	require.Equal(t, cfg.Dispatch.Lease, cfg.Breaker.ProbeLease)
	require.Equal(t, "finance_breakers", cfg.Breaker.Table)
	require.Equal(t, []time.Duration{5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute, 4 * time.Hour},
		[]time.Duration(cfg.Dispatch.Backoff))
}

func TestBatchModeSendsFewRequestsAtOnce(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DISPATCH_MODE": "batch"}
	cfg, err := parseConfig(environ(env), "migrate")
	require.NoError(t, err)
	require.Equal(t, delivery.BatchConcurrency, cfg.Dispatch.Concurrency, "batch mode's default")

	env["DISPATCH_CONCURRENCY"] = "6"
	cfg, err = parseConfig(environ(env), "migrate")
	require.NoError(t, err)
	require.Equal(t, 6, cfg.Dispatch.Concurrency, "an explicit value wins")
}

func TestHelpListsEveryVariable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--help"}, nil, &out, &out))
	for _, v := range []string{"DATABASE_URL", "HTTP_ADDR", "API_TOKENS", "WEBHOOK_SECRET", "LOGISTICS_WEBHOOK_URL",
		"DISPATCH_BATCH", "DISPATCH_LEASE", "DISPATCH_BACKOFF", "DISPATCH_MAX_ATTEMPTS", "MIGRATE_ON_START"} {
		require.True(t, strings.Contains(out.String(), v), v)
	}
	for _, line := range []string{
		"  DISPATCH_BACKOFF                 full-jitter ceilings, comma-separated (default\n" +
			"                                   5s,30s,5m,30m,4h; each at least 50ms)\n",
		"  ALERT_REPEAT                     least time between two messages of one alert (default\n" +
			"                                   1m; at least 1s)\n",
		"  API_TOKENS_FILE                  the file to read API_TOKENS from instead\n",
		"  OTEL_EXPORTER_OTLP_ENDPOINT      OTLP/HTTP collector base URL, e.g.\n",
	} {
		require.Contains(t, out.String(), line)
	}
}

func TestOutboundAllowDefaultsToNothing(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, "migrate")
	require.NoError(t, err)
	require.Zero(t, cfg.OutboundAllow, "unset: every internal destination is refused")
	cfg, err = parseConfig([]string{"OUTBOUND_ALLOW=127.0.0.1/32, logistics.internal:8082"}, "migrate")
	require.NoError(t, err)
	require.NotZero(t, cfg.OutboundAllow)
}

func TestTrustedProxiesDefaultToNobody(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, "migrate")
	require.NoError(t, err)
	require.Zero(t, cfg.TrustedProxies, "unset: forwarding headers are believed from no one")
	cfg, err = parseConfig(environ(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7"}), "migrate")
	require.NoError(t, err)
	require.NotZero(t, cfg.TrustedProxies)
}

// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; the OpenTelemetry
// variables finance declares are accepted, any other OTEL_* is refused like a typo.
func TestTracingVariables(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(serveEnv(nil), "serve")
	require.NoError(t, err)
	require.Empty(t, cfg.Tracing.Endpoint, "off by default")
	require.Equal(t, "finance", cfg.Tracing.ServiceName)

	cfg, err = parseConfig(serveEnv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
		"OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_SERVICE_NAME": "finance-eu"}), "serve")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4318", cfg.Tracing.Endpoint)
	require.Equal(t, 200*time.Millisecond, cfg.Tracing.ScheduleDelay)
	require.Equal(t, "finance-eu", cfg.Tracing.ServiceName)

	_, err = parseConfig(serveEnv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPIONT": "http://127.0.0.1:4318"}), "serve")
	require.EqualError(t, err, "invalid configuration: OTEL_EXPORTER_OTLP_ENDPIONT: unknown variable; did you mean OTEL_EXPORTER_OTLP_ENDPOINT?")
}
