package opsapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/financetest"
)

// Each refusal of strict parsing, on a real server: a member named twice, a member
// matching a field only case-insensitively, an unknown query parameter. Nothing is
// replayed; the same requests spelled correctly succeed.
func TestStrictParsingRefusesAmbiguousRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := financetest.Serve(t, b.e)
	id := b.deadLetter(t, b.issue(t))

	financetest.RequireRefusals(t, base, opsToken, []financetest.Refusal{
		{Name: "unknown query parameter", Method: http.MethodGet, Path: "/v1/ops/outbox/events?state=failed",
			Slug: "unknown-parameter", Detail: `unknown query parameter "state"`},
		{Name: "query parameter in other case", Method: http.MethodGet, Path: "/v1/ops/outbox/events?Status=failed",
			Slug: "unknown-parameter", Detail: `unknown query parameter "Status"`},
		{Name: "query parameter on the stats", Method: http.MethodGet, Path: "/v1/ops/outbox/stats?verbose=1",
			Slug: "unknown-parameter", Detail: `unknown query parameter "verbose"`},
		{Name: "query parameter on a retry", Method: http.MethodPost, Path: "/v1/ops/outbox/events/" + id.String() + "/retry?force=1",
			Slug: "unknown-parameter", Detail: `unknown query parameter "force"`},
		{Name: "query parameter on a trace", Method: http.MethodGet, Path: "/v1/ops/invoices/INV-000001/trace?depth=2",
			Slug: "unknown-parameter", Detail: `unknown query parameter "depth"`},
		{Name: "duplicate member", Method: http.MethodPost, Path: "/v1/ops/outbox/retry", Body: `{"status":"pending","status":"failed"}`,
			Slug: "malformed-json", Detail: `the body is not a retry filter: duplicate member "status"`},
		{Name: "member in other case", Method: http.MethodPost, Path: "/v1/ops/outbox/retry", Body: `{"Status":"failed"}`,
			Slug: "malformed-json", Detail: `the body is not a retry filter: unknown member "Status"`},
		{Name: "data after the object", Method: http.MethodPost, Path: "/v1/ops/outbox/retry", Body: `{"status":"failed"} {}`,
			Slug: "malformed-json", Detail: `the body is not a retry filter: data after the JSON value`},
	})
	require.Equal(t, 1, b.failedCount(t), "nothing replayed")

	status, _, body := financetest.Call(t, base, opsToken, http.MethodGet, "/v1/ops/outbox/events?status=failed&limit=5", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, id.String())
	status, _, body = financetest.Call(t, base, opsToken, http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed","reason":"fixed"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"retried":1,"more":false}`, body)
}
