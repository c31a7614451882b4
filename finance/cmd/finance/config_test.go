package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidConfigNamesTheVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"DISPATCH_BATCH":        "zero",
		"DISPATCH_CONCURRENCY":  "-3",
		"DISPATCH_INTERVAL":     "soon",
		"DISPATCH_BACKOFF":      "5s,never",
		"DISPATCH_MAX_ATTEMPTS": "0",
		"DISPATCH_LEASE":        "5s",
		"MIGRATE_ON_START":      "maybe",
		"LOGISTICS_WEBHOOK_URL": "ftp://example.com/x",
		"API_TOKENS":            "boss:0123456789abcdef",
		"WEBHOOK_SECRET":        "not-a-secret",
		"DATABASE_URL":          "mysql://x",
		"LOG_LEVEL":             "loud",
		"DISPATCH_MODE":         "bulk",
		"BREAKER_THRESHOLD":     "many",
		"BREAKER_COOLDOWN":      "-1s",
		"OUTBOUND_ALLOW":        "10.0.0.0/8,169.254.169.254",
		"TRUSTED_PROXIES":       "10.0.0.0/8,0.0.0.0/0",
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) {
				if k == name {
					return value, true
				}
				return "", false
			}
			var out bytes.Buffer
			err := run(context.Background(), []string{"serve"}, lookup, &out, &out)
			require.Error(t, err)
			require.Contains(t, err.Error(), name)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8081", cfg.HTTPAddr)
	require.Equal(t, "http://127.0.0.1:8082/webhooks/finance", cfg.WebhookURL)
	require.Equal(t, 100, cfg.Dispatch.Batch)
	require.True(t, cfg.MigrateOnStart)
	require.Equal(t, 16, cfg.Dispatch.Concurrency)
}

func TestBatchModeSendsFewRequestsAtOnce(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DISPATCH_MODE": "batch"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := parseConfig(lookup)
	require.NoError(t, err)
	require.Equal(t, 1, cfg.Dispatch.Concurrency, "batch mode's default")

	env["DISPATCH_CONCURRENCY"] = "6"
	cfg, err = parseConfig(lookup)
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
}

func TestOutboundAllowDefaultsToNothing(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Zero(t, cfg.OutboundAllow, "unset: every internal destination is refused")
	cfg, err = parseConfig(func(k string) (string, bool) { return "127.0.0.1/32, logistics.internal:8082", k == "OUTBOUND_ALLOW" })
	require.NoError(t, err)
	require.NotZero(t, cfg.OutboundAllow)
}

func TestTrustedProxiesDefaultToNobody(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Zero(t, cfg.TrustedProxies, "unset: forwarding headers are believed from no one")
	cfg, err = parseConfig(func(k string) (string, bool) { return "10.0.0.0/8, 192.0.2.7", k == "TRUSTED_PROXIES" })
	require.NoError(t, err)
	require.NotZero(t, cfg.TrustedProxies)
}

// A webhook URL carrying credentials is refused without echoing the password.
func TestWebhookURLWithCredentialsIsRefusedRedacted(t *testing.T) {
	t.Parallel()
	_, err := parseConfig(func(k string) (string, bool) {
		return "http://svc:hunter2-secret@127.0.0.1:8082/webhooks/finance", k == "LOGISTICS_WEBHOOK_URL"
	})
	require.ErrorContains(t, err, "LOGISTICS_WEBHOOK_URL")
	require.NotContains(t, err.Error(), "hunter2")
}
