package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

func TestInvalidOncallConfigNamesTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"SLACK_WEBHOOK_URL", map[string]string{"SLACK_WEBHOOK_URL": "hooks.slack.com/x"}, "absolute http(s) URL"},
		{"SLACK_WEBHOOK_URL", map[string]string{"SLACK_WEBHOOK_URL": "https://u:p@hooks.slack.com/x"}, "credentials"},
		{"SLACK_API_URL", map[string]string{"SLACK_API_URL": "https://bot:p@slack.example/api/"}, "credentials"},
		{"SLACK_CHANNEL", map[string]string{"SLACK_TOKEN": "xoxb-1"}, "required with SLACK_TOKEN"},
		{"SLACK_TOKEN", map[string]string{"SLACK_TOKEN": "xoxb-1", "SLACK_CHANNEL": "#c", "SLACK_WEBHOOK_URL": "http://h/x"}, "not both"},
		{"DASHBOARD_URL", map[string]string{"DASHBOARD_URL": "ftp://ops"}, "absolute http(s) URL"},
		{"DASHBOARD_URL", map[string]string{"DASHBOARD_URL": "https://admin:p@ops.example/ops/"}, "credentials"},
		{"ALERT_PENDING_AGE", map[string]string{"ALERT_PENDING_AGE": "soon"}, "want a duration"},
		{"ALERT_PENDING_AGE", map[string]string{"ALERT_PENDING_AGE": "1s"}, "below the floor of 10s"},
		{"ALERT_GATHER", map[string]string{"ALERT_GATHER": "1ms"}, "below the floor of 100ms"},
		{"ALERT_REPEAT", map[string]string{"ALERT_REPEAT": "1ns"}, "below the floor of 1s"},
		{"RETENTION_SCHEDULE", map[string]string{"RETENTION_SCHEDULE": "at three"}, "cron spec"},
		{"RECONCILE_SCHEDULE", map[string]string{"RECONCILE_SCHEDULE": "@every never"}, "cron spec"},
		{"RETENTION_IDEMPOTENCY_AGE", map[string]string{"RETENTION_IDEMPOTENCY_AGE": "1h"}, "below the floor of 24h"},
		{"RETENTION_OUTBOX_AGE", map[string]string{"RETENTION_OUTBOX_AGE": "1m"}, "below the floor of 1h"},
		{"RETENTION_ARCHIVE_AGE", map[string]string{"RETENTION_ARCHIVE_AGE": "48h"}, "below RETENTION_OUTBOX_AGE (720h)"},
		{"RECONCILE_WINDOW", map[string]string{"RECONCILE_WINDOW": "9000h"}, "exceeds RETENTION_ARCHIVE_AGE (8760h)"},
		{"RECONCILE_WINDOW", map[string]string{"RECONCILE_WINDOW": "1s"}, "below the floor of 1m"},
		{"RECONCILE_OVERDUE", map[string]string{"RECONCILE_OVERDUE": "1ms"}, "below the floor of 10s"},
		{"RETENTION_BATCH", map[string]string{"RETENTION_BATCH": "0"}, "at least 1"},
		{"LOGISTICS_API_URL", map[string]string{"LOGISTICS_API_URL": "logistics:8082"}, "absolute http(s) URL"},
		{"LOGISTICS_API_URL", map[string]string{"LOGISTICS_API_URL": "http://ops:pw@logistics:8082"}, "credentials"},
		{"RETENTION_ARCHIVE_AGES", map[string]string{"RETENTION_ARCHIVE_AGES": "1h"}, "did you mean RETENTION_ARCHIVE_AGE?"},
		{"ALERT_REPEATS", map[string]string{"ALERT_REPEATS": "1h"}, "did you mean ALERT_REPEAT?"},
		{"SLACK_TOKN", map[string]string{"SLACK_TOKN": "xoxb-1"}, "did you mean SLACK_TOKEN?"},
		{"LOGISTICS_OPS_TOKN", map[string]string{"LOGISTICS_OPS_TOKN": "x"}, "did you mean LOGISTICS_OPS_TOKEN?"},
		{"WEBHOOK_SECRETS", map[string]string{"WEBHOOK_SECRETS": "x"}, "did you mean WEBHOOK_SECRET?"},
		{"API_TOKEN", map[string]string{"API_TOKEN": "x"}, "did you mean API_TOKENS?"},
		{"DB_MAX_CONNECTIONS", map[string]string{"DB_MAX_CONNECTIONS": "8"}, "did you mean DB_MAX_CONNS?"},
		{"HTTP_ADR", map[string]string{"HTTP_ADR": ":8081"}, "did you mean HTTP_ADDR?"},
		{"MIGRATE_ON_STARTUP", map[string]string{"MIGRATE_ON_STARTUP": "false"}, "did you mean MIGRATE_ON_START?"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+tc.want, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(environ(tc.vars), "migrate")
			commandtest.RequireOneProblem(t, err, tc.name, tc.want)
			require.NotContains(t, err.Error(), ":p@", "credentials are never echoed")
			require.NotContains(t, err.Error(), ":pw@", "credentials are never echoed")
		})
	}
}

func TestOncallDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{"HTTP_ADDR=10.0.0.5:9000", "LOGISTICS_WEBHOOK_URL=https://logi.internal:8443/webhooks/finance"}, "migrate")
	require.NoError(t, err)
	require.Equal(t, "http://10.0.0.5:9000/ops/", cfg.Oncall.DashboardURL)
	require.Equal(t, "https://logi.internal:8443", cfg.Oncall.Reconcile.LogisticsURL)
	require.Equal(t, 5*time.Minute, cfg.Oncall.PendingAge)
	require.Equal(t, "0 3 * * *", cfg.Oncall.Retention.Schedule)
	require.Equal(t, 30*day, cfg.Oncall.Retention.OutboxAge)
	require.Equal(t, 365*day, cfg.Oncall.Retention.ArchiveAge)
	require.Equal(t, time.Hour, cfg.Oncall.Reconcile.Window)
	require.Empty(t, cfg.Oncall.Slack.APIURL, "the Slack client's own default")
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
	lookup := []string{"DATABASE_URL=" + url}

	var out, progress bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, lookup, &out, &progress))
	require.Regexp(t, `(?m)^finance_outbox\s+1$`, out.String())
	require.Regexp(t, `(?m)^idempotency_keys\s+0$`, out.String())
	require.Equal(t, "retention: finance_outbox: move events of finance_outbox delivered more than 30 days ago, "+
		"with their attempts, to finance_outbox_archive\n"+
		"retention: finance_outbox: 1 rows so far\n"+
		"retention: finance_outbox_archive: delete rows of finance_outbox_archive whose delivered_at is older than 365 days\n"+
		"retention: finance_reconciliations: delete rows of finance_reconciliations whose finished_at is older than 30 days\n"+
		"retention: idempotency_keys: delete Idempotency-Key records older than 24h\n", progress.String(),
		"what each job does, and its rows after each batch, on stderr")
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, lookup, &out, io.Discard))
	require.Regexp(t, `(?m)^finance_outbox\s+0$`, out.String())

	require.ErrorAs(t, run(context.Background(), []string{"retention"}, lookup, &out, &out), new(*cli.UsageError))
}

func TestReconcileNeedsTheOpsToken(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"reconcile", "--since=1h"}, nil, &out, &out)
	require.EqualError(t, err, "invalid configuration: LOGISTICS_OPS_TOKEN: required by reconcile")
	err = run(context.Background(), []string{"reconcile", "--since=yesterday"}, []string{"LOGISTICS_OPS_TOKEN=ops-token-0123456789abc"}, &out, &out)
	require.ErrorContains(t, err, "--since")
}
