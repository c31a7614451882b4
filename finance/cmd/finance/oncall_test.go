package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

func TestInvalidOncallConfigNamesTheVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"SLACK_WEBHOOK_URL":         {"SLACK_WEBHOOK_URL": "hooks.slack.com/x"},
		"SLACK_CHANNEL":             {"SLACK_TOKEN": "xoxb-1"},
		"SLACK_TOKEN":               {"SLACK_TOKEN": "xoxb-1", "SLACK_CHANNEL": "#c", "SLACK_WEBHOOK_URL": "http://h/x"},
		"DASHBOARD_URL":             {"DASHBOARD_URL": "ftp://ops"},
		"ALERT_PENDING_AGE":         {"ALERT_PENDING_AGE": "soon"},
		"RETENTION_SCHEDULE":        {"RETENTION_SCHEDULE": "at three"},
		"RECONCILE_SCHEDULE":        {"RECONCILE_SCHEDULE": "@every never"},
		"RETENTION_IDEMPOTENCY_AGE": {"RETENTION_IDEMPOTENCY_AGE": "1h"},
		"RETENTION_BATCH":           {"RETENTION_BATCH": "0"},
		"LOGISTICS_API_URL":         {"LOGISTICS_API_URL": "logistics:8082"},
	}
	for name, vars := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
			require.Error(t, err)
			require.Contains(t, err.Error(), "invalid "+name)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestOncallDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(func(k string) (string, bool) {
		v, ok := map[string]string{"HTTP_ADDR": "10.0.0.5:9000", "LOGISTICS_WEBHOOK_URL": "https://logi.internal:8443/webhooks/finance"}[k]
		return v, ok
	})
	require.NoError(t, err)
	require.Equal(t, "http://10.0.0.5:9000/ops/", cfg.Oncall.DashboardURL)
	require.Equal(t, "https://logi.internal:8443", cfg.Oncall.Reconcile.LogisticsURL)
	require.Equal(t, 5*time.Minute, cfg.Oncall.PendingAge)
	require.Equal(t, "0 3 * * *", cfg.Oncall.Retention.Schedule)
	require.Equal(t, 30*day, cfg.Oncall.Retention.OutboxAge)
	require.Equal(t, time.Hour, cfg.Oncall.Reconcile.Window)
	require.False(t, cfg.Oncall.Slack.Enabled())
	require.Equal(t, 30*time.Second, pendingCheckEvery(5*time.Minute))
	require.Equal(t, time.Second, pendingCheckEvery(time.Second))
}

// `finance retention run` archives what is past its window, prints the counts, and a
// second run finds nothing left.
func TestRetentionRunPrintsCounts(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t, "finance", migrations.Finance())
	db, err := pgdb.Open(context.Background(), url, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.NewRaw(`INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination,
			aggregate_key, aggregate_seq, delivery_status, delivered_at)
		VALUES (gen_random_uuid(), 'invoice.paid', '{}', 'k-old', 'http://l', 'inv-1', 1, 'delivered', now() - interval '31 days'),
		       (gen_random_uuid(), 'invoice.paid', '{}', 'k-new', 'http://l', 'inv-2', 1, 'delivered', now() - interval '29 days')`).
		Exec(context.Background())
	require.NoError(t, err)
	lookup := func(k string) (string, bool) { return url, k == "DATABASE_URL" }

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, lookup, &out, &out))
	require.Regexp(t, `(?m)^finance_outbox\s+1$`, out.String())
	require.Regexp(t, `(?m)^idempotency_keys\s+0$`, out.String())
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, lookup, &out, &out))
	require.Regexp(t, `(?m)^finance_outbox\s+0$`, out.String())

	require.ErrorIs(t, run(context.Background(), []string{"retention"}, lookup, &out, &out), errUsage)
}

func TestReconcileNeedsTheOpsToken(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"reconcile", "--since=1h"}, func(string) (string, bool) { return "", false }, &out, &out)
	require.ErrorContains(t, err, "LOGISTICS_OPS_TOKEN")
	err = run(context.Background(), []string{"reconcile", "--since=yesterday"}, func(string) (string, bool) { return "", false }, &out, &out)
	require.ErrorContains(t, err, "--since")
}
