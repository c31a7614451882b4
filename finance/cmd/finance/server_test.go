package main

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"handoff/docs/openapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/pgtest"
)

// docs/openapi/finance.yaml, which serve embeds and serves at /openapi.json, has an
// operation for every route serve registers, and none that no route serves: a route
// added without its document fails here.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	cfg, err := parseConfig(serveEnv(nil), "serve")
	require.NoError(t, err)
	e, closeOps, err := newServer(db, cfg, newGuard(cfg), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(closeOps)

	undocumented, unrouted, err := apidoc.Compare(e.Routes(), openapi.Finance())
	require.NoError(t, err)
	assert.Empty(t, undocumented, "routes that docs/openapi/finance.yaml lacks")
	assert.Empty(t, unrouted, "operations of docs/openapi/finance.yaml that no route serves")
}
