package opsapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"

	"handoff/logistics/internal/shipment"
)

// The route takes only the parameters it lists: a misspelled filter, one in another
// case or one it never had is refused instead of ignored; the listed ones still work.
// The route has no body, so members cannot be named twice or in the wrong case here.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := uuid.New()
	key := b.receive(t, shipment.InvoicePaid, inv, 2, time.Now())

	for q, name := range map[string]string{
		"invoice=" + inv.String():                  "invoice",
		"Invoice_ID=" + inv.String():               "Invoice_ID",
		"invoice_id=" + inv.String() + "&result=x": "result",
	} {
		query, err := url.ParseQuery(q)
		require.NoError(t, err)
		status, body := b.get(t, opsToken, query)
		require.Equal(t, http.StatusBadRequest, status, string(body))
		var p problem.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, problem.TypeBase+"unknown-parameter", p.Type)
		require.Equal(t, `unknown query parameter "`+name+`"`, p.Detail)
	}
	status, _ := b.get(t, "", url.Values{"invoice": {inv.String()}})
	require.Equal(t, http.StatusUnauthorized, status, "the token is checked before the query")

	got := b.page(t, url.Values{"invoice_id": {inv.String()}, "limit": {"5"}})
	require.Len(t, got.Items, 1)
	require.Equal(t, key, got.Items[0].IdempotencyKey)
}
