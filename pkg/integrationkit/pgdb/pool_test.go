package pgdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

func TestMaxConnectionsIsTheServersSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := pgtest.NewDB(t, "kitprepared", notesSchema)
	n, err := pgdb.MaxConnections(ctx, db)
	require.NoError(t, err)
	var want int
	require.NoError(t, db.NewRaw(`SELECT current_setting('max_connections')::int`).Scan(ctx, &want))
	require.Equal(t, want, n)
	require.Positive(t, n)
}
