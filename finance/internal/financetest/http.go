package financetest

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

// Serve serves h on a local port until t ends and returns its base URL.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Call makes one request to the server at base, with token as its bearer (none when
// empty) and body as JSON, and returns its answer.
func Call(t testing.TB, base, token, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
	}
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

// Refusal is a request strict parsing refuses with 400 and the problem it answers.
type Refusal struct {
	Name, Method, Path, Body string
	Slug, Detail             string
	// Field, when set, is the one field the problem names as not of the request.
	Field string
}

// RequireRefusals sends each refusal's request with token to the server at base, each
// in a subtest, and checks the problem that answers it.
func RequireRefusals(t *testing.T, base, token string, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			status, header, body := Call(t, base, token, r.Method, r.Path, r.Body)
			require.Equal(t, http.StatusBadRequest, status, body)
			require.Equal(t, problem.ContentType, header.Get(echo.HeaderContentType))
			var p problem.Problem
			require.NoError(t, json.Unmarshal([]byte(body), &p))
			require.Equal(t, problem.TypeBase+r.Slug, p.Type)
			require.Equal(t, r.Detail, p.Detail)
			if r.Field != "" {
				require.Equal(t, []problem.FieldError{{Field: r.Field, Detail: "is not a field of this request"}}, p.Errors)
			}
		})
	}
}
