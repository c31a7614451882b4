package apidoc_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/apidoc"
)

const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /things:
    summary: things
    get:
      responses: &ok
        200: {description: fine}
    post:
      responses: *ok
  /things/{id}:
    parameters: [{name: id, in: path, required: true}]
    get:
      responses: *ok
  /gone:
    delete:
      responses: *ok
`

func TestJSONResolvesAliasesAndQuotesKeys(t *testing.T) {
	t.Parallel()
	out, err := apidoc.JSON([]byte("a: &x {200: ok, when: 2030-01-02T03:04:05Z}\nb: *x\nc: '<p>'\n"))
	require.NoError(t, err)
	require.JSONEq(t, `{"a":{"200":"ok","when":"2030-01-02T03:04:05Z"},"b":{"200":"ok","when":"2030-01-02T03:04:05Z"},"c":"<p>"}`,
		string(out))
	require.Contains(t, string(out), `"<p>"`, "HTML is not escaped")

	_, err = apidoc.JSON([]byte("a: [b"))
	require.Error(t, err)
}

func TestRegisterServesTheDocumentAsJSON(t *testing.T) {
	t.Parallel()
	e := echo.New()
	require.NoError(t, apidoc.Register(e, []byte(doc)))
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, apidoc.Path, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, echo.MIMEApplicationJSON, rec.Header().Get(echo.HeaderContentType))
	want, err := apidoc.JSON([]byte(doc))
	require.NoError(t, err)
	require.JSONEq(t, string(want), rec.Body.String())

	require.Error(t, apidoc.Register(echo.New(), []byte("a: [b")), "a broken document stops the start")
}

func TestCompareListsWhatEachSideLacks(t *testing.T) {
	t.Parallel()
	e := echo.New()
	noop := func(echo.Context) error { return nil }
	g := e.Group("/things", func(next echo.HandlerFunc) echo.HandlerFunc { return next })
	g.GET("", noop)
	g.POST("", noop)
	g.GET("/:id", noop)
	g.PUT("/:id", noop)
	e.GET("/new", noop)

	undocumented, unrouted, err := apidoc.Compare(e.Routes(), []byte(doc))
	require.NoError(t, err)
	require.Equal(t, []string{"GET /new", "PUT /things/{id}"}, undocumented, "group catch-alls are left out")
	require.Equal(t, []string{"DELETE /gone"}, unrouted)

	_, _, err = apidoc.Compare(e.Routes(), []byte("paths: [b"))
	require.Error(t, err)
}
