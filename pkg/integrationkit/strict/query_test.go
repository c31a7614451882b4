package strict_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

func TestCheckQuery(t *testing.T) {
	t.Parallel()
	allowed := []string{"status", "customer", "limit"}
	tests := []struct {
		query string
		// slug and detail of the problem, or "" when the query is accepted.
		slug, detail string
	}{
		{"", "", ""},
		{"status=paid&customer=c&limit=2", "", ""},
		{"status", "", ""},
		{"status=a&status=b", "", ""},
		{"customer_id=x", "unknown-parameter", `unknown query parameter "customer_id"`},
		{"Status=paid", "unknown-parameter", `unknown query parameter "Status"`},
		{"zeta=1&status=paid&alpha=2", "unknown-parameter", `unknown query parameter "alpha"`},
		{"=x", "unknown-parameter", `unknown query parameter ""`},
		{"status=paid;customer=c", "malformed-query", "the query string is malformed: invalid semicolon separator in query"},
		{"customer=%zz", "malformed-query", `the query string is malformed: invalid URL escape "%zz"`},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			err := strict.CheckQuery(tc.query, allowed...)
			if tc.slug == "" {
				require.NoError(t, err)
				return
			}
			p := problem.From(err)
			require.Equal(t, http.StatusBadRequest, p.Status)
			require.Equal(t, problem.TypeBase+tc.slug, p.Type)
			require.Equal(t, tc.detail, p.Detail)
		})
	}
	require.Error(t, strict.CheckQuery("a=1"), "no names allowed, none taken")
}

func TestQueryMiddlewareStopsTheRequest(t *testing.T) {
	t.Parallel()
	e := httpserver.New(slog.New(slog.DiscardHandler))
	e.GET("/things", func(c echo.Context) error { return c.String(http.StatusOK, "handled") }, strict.Query("limit"))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for query, want := range map[string]int{"": http.StatusOK, "?limit=5": http.StatusOK, "?limt=5": http.StatusBadRequest} {
		resp, err := http.Get(srv.URL + "/things" + query)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, want, resp.StatusCode, string(body))
		if want != http.StatusOK {
			require.Equal(t, problem.ContentType, resp.Header.Get(echo.HeaderContentType))
			var p problem.Problem
			require.NoError(t, json.Unmarshal(body, &p))
			require.Equal(t, `unknown query parameter "limt"`, p.Detail)
		}
	}
}
