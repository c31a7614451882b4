package warehouseapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
)

// Each refusal of strict parsing: a member named twice, a member matching a field
// only case-insensitively, an unknown query parameter. The shipment does not move;
// the same requests spelled correctly succeed.
func TestStrictParsingRefusesAmbiguousRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.paid(t)
	id := b.shipmentOf(t, inv).ID
	moves := "/v1/shipments/" + id + "/transitions"

	tests := []struct {
		name, method, path, body string
		slug, detail             string
	}{
		{"unknown query parameter", http.MethodGet, "/v1/shipments?status=waiting", "",
			"unknown-parameter", `unknown query parameter "status"`},
		{"query parameter in other case", http.MethodGet, "/v1/shipments?State=waiting", "",
			"unknown-parameter", `unknown query parameter "State"`},
		{"query parameter on one shipment", http.MethodGet, "/v1/shipments/" + id + "?expand=history", "",
			"unknown-parameter", `unknown query parameter "expand"`},
		{"query parameter on a transition", http.MethodPost, moves + "?force=true", `{"to":"picking","version":1}`,
			"unknown-parameter", `unknown query parameter "force"`},
		{"duplicate member", http.MethodPost, moves, `{"to":"cancelled","to":"picking","version":1}`,
			"malformed-request", `the body is not a valid transition request: duplicate member "to"`},
		{"member in other case", http.MethodPost, moves, `{"To":"picking","version":1}`,
			"malformed-request", `the body is not a valid transition request: unknown member "To"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := decode[problem.Problem](t, b.do(t, tc.method, tc.path, warehouseToken, tc.body), http.StatusBadRequest)
			require.Equal(t, problem.TypeBase+tc.slug, p.Type)
			require.Equal(t, tc.detail, p.Detail)
		})
	}
	v := b.shipmentOf(t, inv)
	require.Equal(t, "waiting", v.State, "the shipment did not move")
	require.EqualValues(t, 1, v.Version)

	l := decode[list](t, b.get(t, "/v1/shipments?state=waiting&limit=5"), http.StatusOK)
	require.Len(t, l.Items, 1)
	v = decode[view](t, b.do(t, http.MethodPost, moves, warehouseToken, `{"to":"picking","version":1}`), http.StatusOK)
	require.Equal(t, "picking", v.State)
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/v1/shipments?status=x", "", "").Status,
		"the token is checked before the query")
}
