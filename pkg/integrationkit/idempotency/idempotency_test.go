package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/problem"
)

// things is where the handlers of the atomicity tests make their change.
const things = `CREATE TABLE things (id text PRIMARY KEY, call int NOT NULL);`

var migrations = fstest.MapFS{"000001_keys.up.sql": {Data: []byte(idempotency.Schema(idempotency.DefaultTable) + things)}}

type bundle struct {
	db    *bun.DB
	mw    *idempotency.Middleware
	e     *echo.Echo
	calls atomic.Int32
	// handle is the route's behaviour for call n (1-based); the default answers 201.
	handle func(c echo.Context, n int32) error
}

// setup serves POST /things/:id through the middleware. The principal is the
// X-Principal header, so tests can act as several callers.
func setup(t *testing.T, cfg idempotency.Config) *bundle {
	t.Helper()
	db, _ := pgtest.NewDB(t, "idemkit", migrations)
	cfg.Principal = func(c echo.Context) string { return c.Request().Header.Get("X-Principal") }
	mw, err := idempotency.New(db, cfg)
	require.NoError(t, err)
	b := &bundle{db: db, mw: mw, e: httpserver.New(slog.New(slog.DiscardHandler)), handle: created}
	b.e.POST("/things/:id", func(c echo.Context) error {
		return b.handle(c, b.calls.Add(1))
	}, mw.Handler())
	return b
}

// created answers 201 with a body that names the call, so a replay is recognisable.
func created(c echo.Context, n int32) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/things/"+c.Param("id"))
	return c.JSON(http.StatusCreated, map[string]any{"call": n, "echo": string(body), "at": time.Now().UnixNano()})
}

func (b *bundle) post(t *testing.T, path, key, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	req.Header.Set("X-Principal", "clerk:1")
	if key != "" {
		req.Header.Set(idempotency.HeaderKey, key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	return rec
}

// count is how many rows table holds.
func (b *bundle) count(t *testing.T, table string) int {
	t.Helper()
	n, err := b.db.NewSelect().Table(table).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// requireFresh requires rec to be the handler's own answer, not a replay, and the
// handler to have run calls times.
func (b *bundle) requireFresh(t *testing.T, rec *httptest.ResponseRecorder, calls int32) {
	t.Helper()
	require.Equal(t, http.StatusCreated, rec.Code)
	require.Empty(t, rec.Header().Get(idempotency.HeaderReplayed))
	require.EqualValues(t, calls, b.calls.Load())
}

func requireProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, slug string) {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	require.Equal(t, problem.ContentType, rec.Header().Get(echo.HeaderContentType))
	require.Contains(t, rec.Body.String(), `"type":"`+problem.TypeBase+slug+`"`)
}

func TestReplayIsByteForByte(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})

	first := b.post(t, "/things/1", "k-1", `{"a":1}`)
	b.requireFresh(t, first, 1)

	again := b.post(t, "/things/1", "k-1", `{"a":1}`)
	require.Equal(t, http.StatusCreated, again.Code)
	require.Equal(t, first.Body.Bytes(), again.Body.Bytes())
	require.Equal(t, "true", again.Header().Get(idempotency.HeaderReplayed))
	require.Equal(t, "/things/1", again.Header().Get(echo.HeaderLocation))
	require.Equal(t, first.Header().Get(echo.HeaderContentType), again.Header().Get(echo.HeaderContentType))
	require.NotEqual(t, first.Header().Get(httpserver.HeaderRequestID), again.Header().Get(httpserver.HeaderRequestID),
		"the request id belongs to each request and is not replayed")
	require.EqualValues(t, 1, b.calls.Load())
}

func TestWithoutKeyRequestsPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})

	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "", `{}`).Code)
	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "", `{}`).Code)
	require.EqualValues(t, 2, b.calls.Load())
	require.Zero(t, b.count(t, "idempotency_keys"))
}

func TestSameKeyDifferentRequestIs422(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "k-1", `{"a":1}`).Code)

	requireProblem(t, b.post(t, "/things/1", "k-1", `{"a":2}`), http.StatusUnprocessableEntity, "idempotency-key-reused")
	requireProblem(t, b.post(t, "/things/2", "k-1", `{"a":1}`), http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.EqualValues(t, 1, b.calls.Load())
}

func TestKeysAreScopedByPrincipal(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})

	first := b.post(t, "/things/1", "k-1", `{}`)
	other := b.post(t, "/things/1", "k-1", `{}`, "X-Principal", "clerk:2")
	b.requireFresh(t, other, 2)
	require.NotEqual(t, first.Body.String(), other.Body.String())
}

// blockFirstCall makes the first call signal entered and wait for release.
func blockFirstCall(b *bundle) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	b.handle = func(c echo.Context, n int32) error {
		if n == 1 {
			close(entered)
			<-release
		}
		return created(c, n)
	}
	return entered, release
}

func TestConcurrentRequestWithSameKeyIs409(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	entered, release := blockFirstCall(b)

	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- b.post(t, "/things/1", "k-1", `{}`) }()
	<-entered

	busy := b.post(t, "/things/1", "k-1", `{}`)
	requireProblem(t, busy, http.StatusConflict, "idempotency-key-in-flight")
	require.Equal(t, "1", busy.Header().Get("Retry-After"))

	close(release)
	first := <-done
	require.Equal(t, http.StatusCreated, first.Code)
	replayed := b.post(t, "/things/1", "k-1", `{}`)
	require.Equal(t, first.Body.String(), replayed.Body.String())
	require.EqualValues(t, 1, b.calls.Load())
}

func TestServerErrorsAreNotStored(t *testing.T) {
	t.Parallel()
	cases := map[string]func(c echo.Context) error{
		"error": func(echo.Context) error { return errors.New("database unavailable") },
		"503":   func(echo.Context) error { return problem.New(http.StatusServiceUnavailable, "unavailable", "later") },
		"panic": func(echo.Context) error { panic("handler bug") },
	}
	for name, fail := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, idempotency.Config{})
			b.handle = func(c echo.Context, n int32) error {
				if n == 1 {
					return fail(c)
				}
				return created(c, n)
			}

			failed := b.post(t, "/things/1", "k-1", `{}`)
			require.GreaterOrEqual(t, failed.Code, http.StatusInternalServerError)
			require.Equal(t, problem.ContentType, failed.Header().Get(echo.HeaderContentType))
			require.Zero(t, b.count(t, "idempotency_keys"))

			retried := b.post(t, "/things/1", "k-1", `{}`)
			b.requireFresh(t, retried, 2)
		})
	}
}

func TestClientErrorsAreStoredAsRendered(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	b.handle = func(echo.Context, int32) error {
		return problem.New(http.StatusConflict, "thing-locked", "the thing is locked")
	}

	first := b.post(t, "/things/1", "k-1", `{}`)
	requireProblem(t, first, http.StatusConflict, "thing-locked")
	again := b.post(t, "/things/1", "k-1", `{}`)
	requireProblem(t, again, http.StatusConflict, "thing-locked")
	require.Equal(t, first.Body.Bytes(), again.Body.Bytes())
	require.Equal(t, "true", again.Header().Get(idempotency.HeaderReplayed))
	require.EqualValues(t, 1, b.calls.Load())
}

func TestExpiredKeyCountsAsAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "k-1", `{"a":1}`).Code)
	_, err := b.db.NewRaw(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`).Exec(context.Background())
	require.NoError(t, err)

	again := b.post(t, "/things/1", "k-1", `{"a":2}`)
	b.requireFresh(t, again, 2)
}

func TestInvalidKeysAre400(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	for name, key := range map[string]string{
		"too long":     strings.Repeat("k", idempotency.MaxKeyLength+1),
		"control char": "k\x01",
		"non-ASCII":    "clé",
	} {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, b.post(t, "/things/1", key, `{}`), http.StatusBadRequest, "idempotency-key-invalid")
		})
	}
	t.Run("empty", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/things/1", strings.NewReader(`{}`))
		req.Header[idempotency.HeaderKey] = []string{""}
		rec := httptest.NewRecorder()
		b.e.ServeHTTP(rec, req)
		requireProblem(t, rec, http.StatusBadRequest, "idempotency-key-invalid")
	})
	t.Run("longest accepted", func(t *testing.T) {
		key := strings.Repeat("k", idempotency.MaxKeyLength)
		require.Equal(t, http.StatusCreated, b.post(t, "/things/1", key, `{}`).Code)
	})
	require.EqualValues(t, 1, b.calls.Load())
}

func TestBodyOverLimitIs413(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{MaxBodyBytes: 16})
	requireProblem(t, b.post(t, "/things/1", "k-1", strings.Repeat("x", 17)), http.StatusRequestEntityTooLarge, "body-too-large")
	require.Zero(t, b.calls.Load())
}

func TestPurgeDeletesOldKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	for i := range 3 {
		require.Equal(t, http.StatusCreated, b.post(t, "/things/1", fmt.Sprintf("k-%d", i), `{}`).Code)
	}
	_, err := b.db.NewRaw(`UPDATE idempotency_keys SET created_at = now() - interval '2 days' WHERE key <> 'k-0'`).
		Exec(context.Background())
	require.NoError(t, err)

	n, err := b.mw.Purge(context.Background(), 24*time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.Equal(t, 1, b.count(t, "idempotency_keys"))
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	_, err := idempotency.New(nil, idempotency.Config{Table: "keys; DROP TABLE x"})
	require.ErrorContains(t, err, "Table")
	_, err = idempotency.New(nil, idempotency.Config{TTL: -time.Second})
	require.ErrorContains(t, err, "TTL")
}
