package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

// The dashboard shows the reconciliation job's newest report through the ops seam.
func TestLatestReconciliationAdaptsTheStoredReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	src := latestReconciliation{db: db}
	_, ok, err := src.Latest(ctx)
	require.NoError(t, err)
	require.False(t, ok)

	_, err = db.NewRaw(`INSERT INTO finance_reconciliations (started_at, window_from, window_to, delivered_count,
		processed_count, missing_count, missing) VALUES (now(), now() - interval '1 hour', now(), 5, 4, 1,
		'[{"idempotency_key":"invoice.paid:a:b","at":"2030-01-01T00:00:00Z"}]')`).Exec(ctx)
	require.NoError(t, err)
	r, ok, err := src.Latest(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 5, r.Delivered)
	require.Equal(t, 4, r.Processed)
	require.Equal(t, 1, r.MissingCount)
	require.Equal(t, []string{"invoice.paid:a:b"}, r.Missing)
	require.Empty(t, r.Unknown)
	require.False(t, r.Clean())
}
