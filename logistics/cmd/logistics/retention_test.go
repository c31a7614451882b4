package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// `logistics retention run` deletes processed events past the window, exactly, and
// a second run finds nothing left.
func TestRetentionRunDeletesOldProcessedEvents(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t, "logistics", migrations.Logistics())
	db, err := pgdb.Open(context.Background(), url, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.NewRaw(`INSERT INTO logistics_processed_events (idempotency_key, payload_hash, event_id, event_type, result, received_at)
		VALUES ('k-old', '\x00', 'e1', 'invoice.paid', 'applied', now() - interval '91 days'),
		       ('k-new', '\x00', 'e2', 'invoice.paid', 'applied', now() - interval '89 days')`).Exec(context.Background())
	require.NoError(t, err)
	vars := map[string]string{"DATABASE_URL": url}

	var out, progress bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, env(vars), &out, &progress))
	require.Regexp(t, `(?m)^logistics_processed_events\s+1$`, out.String())
	require.Equal(t, "retention: logistics_processed_events: delete rows of logistics_processed_events whose "+
		"received_at is older than 90 days\nretention: logistics_processed_events: 1 rows so far\n", progress.String())
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"retention", "run"}, env(vars), &out, io.Discard))
	require.Regexp(t, `(?m)^logistics_processed_events\s+0$`, out.String())
	var left []string
	require.NoError(t, db.NewRaw(`SELECT idempotency_key FROM logistics_processed_events`).Scan(context.Background(), &left))
	require.Equal(t, []string{"k-new"}, left)
	require.ErrorAs(t, run(context.Background(), []string{"retention"}, env(vars), io.Discard, io.Discard), new(*cli.UsageError))
}
