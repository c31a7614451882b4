package opsapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
)

// Each refusal of strict parsing, on a real server: a member named twice, a member
// matching a field only case-insensitively, an unknown query parameter. Nothing is
// replayed; the same requests spelled correctly succeed.
func TestStrictParsingRefusesAmbiguousRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.e)
	t.Cleanup(srv.Close)
	id := b.deadLetter(t, b.issue(t))

	tests := []struct {
		name, method, path, body string
		slug, detail             string
	}{
		{"unknown query parameter", http.MethodGet, "/v1/ops/outbox/events?state=failed", "",
			"unknown-parameter", `unknown query parameter "state"`},
		{"query parameter in other case", http.MethodGet, "/v1/ops/outbox/events?Status=failed", "",
			"unknown-parameter", `unknown query parameter "Status"`},
		{"query parameter on the stats", http.MethodGet, "/v1/ops/outbox/stats?verbose=1", "",
			"unknown-parameter", `unknown query parameter "verbose"`},
		{"query parameter on a retry", http.MethodPost, "/v1/ops/outbox/events/" + id.String() + "/retry?force=1", "",
			"unknown-parameter", `unknown query parameter "force"`},
		{"query parameter on a trace", http.MethodGet, "/v1/ops/invoices/INV-000001/trace?depth=2", "",
			"unknown-parameter", `unknown query parameter "depth"`},
		{"duplicate member", http.MethodPost, "/v1/ops/outbox/retry", `{"status":"pending","status":"failed"}`,
			"malformed-json", `the body is not a retry filter: duplicate member "status"`},
		{"member in other case", http.MethodPost, "/v1/ops/outbox/retry", `{"Status":"failed"}`,
			"malformed-json", `the body is not a retry filter: unknown member "Status"`},
		{"data after the object", http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed"} {}`,
			"malformed-json", `the body is not a retry filter: data after the JSON value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, header, body := call(t, srv.URL, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, status, body)
			require.Equal(t, problem.ContentType, header.Get(echo.HeaderContentType))
			var p problem.Problem
			require.NoError(t, json.Unmarshal([]byte(body), &p))
			require.Equal(t, problem.TypeBase+tc.slug, p.Type)
			require.Equal(t, tc.detail, p.Detail)
		})
	}
	var failed int
	require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`).Scan(b.ctx, &failed))
	require.Equal(t, 1, failed, "nothing replayed")

	status, _, body := call(t, srv.URL, http.MethodGet, "/v1/ops/outbox/events?status=failed&limit=5", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, id.String())
	status, _, body = call(t, srv.URL, http.MethodPost, "/v1/ops/outbox/retry", `{"status":"failed","reason":"fixed"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"retried":1,"more":false}`, body)
}

// call makes one request with the ops token to the server at base and returns its answer.
func call(t *testing.T, base, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+opsToken)
	if body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(out)
}
