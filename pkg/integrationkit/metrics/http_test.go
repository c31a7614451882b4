package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/metrics"
)

// Every answer of a real server is counted under its route pattern, never its raw
// path; unknown paths share one label and unknown methods another.
func TestHTTPSeries(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	e := echo.New()
	e.Logger.SetOutput(io.Discard) // the recovery middleware logs the panic's stack
	e.Use(middleware.Recover(), metrics.NewHTTP(reg, "svc").Middleware())
	e.GET("/v1/things/:id", func(c echo.Context) error {
		if c.Param("id") == "taken" {
			return echo.NewHTTPError(http.StatusConflict)
		}
		return c.NoContent(http.StatusOK)
	})
	e.GET("/v1/panics", func(echo.Context) error { panic("boom") })
	metrics.Register(e, reg)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/things/1"},
		{http.MethodGet, "/v1/things/2"},
		{http.MethodGet, "/v1/things/taken"},
		{http.MethodPost, "/v1/things/1"},
		{http.MethodGet, "/v1/panics"},
		{http.MethodGet, "/no/such/path"},
		{http.MethodGet, "/v1/thing"},
		{"BREW", "/v1/things/1"},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	resp, err := srv.Client().Get(srv.URL + metrics.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := string(b)
	var missing []string
	for _, series := range []string{
		`svc_http_requests_total{method="GET",route="/v1/things/:id",status="200"} 2`,
		`svc_http_requests_total{method="GET",route="/v1/things/:id",status="409"} 1`,
		`svc_http_requests_total{method="POST",route="/v1/things/:id",status="405"} 1`,
		`svc_http_requests_total{method="GET",route="/v1/panics",status="500"} 1`,
		`svc_http_requests_total{method="GET",route="unmatched",status="404"} 2`,
		`svc_http_requests_total{method="other",route="/v1/things/:id",status="405"} 1`,
		`svc_http_request_duration_seconds_count{method="GET",route="/v1/things/:id",status="200"} 2`,
		`svc_http_request_duration_seconds_bucket{method="GET",route="/v1/things/:id",status="200",le="+Inf"} 2`,
	} {
		if !strings.Contains(body, series) {
			missing = append(missing, series)
		}
	}
	require.Empty(t, missing, "series missing from /metrics")
	for _, raw := range []string{"/v1/things/1", "/v1/thing", "/no/such/path", "BREW"} {
		require.NotContains(t, body, `"`+raw+`"`, "a raw path or method became a label")
	}
	require.Equal(t, 1, strings.Count(body, "# TYPE svc_http_request_duration_seconds histogram"))
}
