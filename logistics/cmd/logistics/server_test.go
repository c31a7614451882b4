package main

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"handoff/docs/openapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/apidoc"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/pgtest"
)

// docs/openapi/logistics.yaml, which serve embeds and serves at /openapi.json, has an
// operation for every route serve registers, and none that no route serves: a route
// added without its document fails here.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "logistics", migrations.Logistics())
	cfg, err := parseConfig(env(map[string]string{"WEBHOOK_SECRET": testSecret, "API_TOKENS": testTokens}), "serve")
	require.NoError(t, err)
	e, err := newServer(db, cfg, metrics.NewRegistry(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	undocumented, unrouted, err := apidoc.Compare(e.Routes(), openapi.Logistics())
	require.NoError(t, err)
	assert.Empty(t, undocumented, "routes that docs/openapi/logistics.yaml lacks")
	assert.Empty(t, unrouted, "operations of docs/openapi/logistics.yaml that no route serves")
}
