package idempotency_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pgtest"
)

// With the default Principal (auth.Caller) keys belong to the caller: two tokens of a
// role without names are two callers (one never gets the other's stored answer, nor a
// 422 for its own first use of a key), and two tokens of one named caller (a rotation)
// are one (the retry under the new token is a replay).
func TestKeysBelongToTheCaller(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "idemkit", migrations)
	tokens, err := auth.ParseTokens("clerk:alice-token-0123456789,clerk:bob-token-01234567890,"+
		"clerk:erp:erp-old-token-0123456789,clerk:erp:erp-new-token-0123456789", "clerk")
	require.NoError(t, err)
	mw, err := idempotency.New(db, idempotency.Config{}) // the default Principal
	require.NoError(t, err)
	e := httpserver.New(slog.New(slog.DiscardHandler))
	var calls atomic.Int32
	e.POST("/things/:id", func(c echo.Context) error { return created(c, calls.Add(1)) },
		tokens.Require("clerk"), mw.Handler())
	post := func(token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/things/1", strings.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
		req.Header.Set(idempotency.HeaderKey, "order-42")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}

	alice := post("alice-token-0123456789", `{"customer":"alice"}`)
	require.Equal(t, http.StatusCreated, alice.Code)
	bob := post("bob-token-01234567890", `{"customer":"alice"}`)
	require.Empty(t, bob.Header().Get(idempotency.HeaderReplayed), "bob is replayed alice's answer: %s", bob.Body.String())
	require.Equal(t, http.StatusCreated, bob.Code, bob.Body.String())
	require.EqualValues(t, 2, calls.Load(), "each caller's request ran")

	before := post("erp-old-token-0123456789", `{"customer":"erp"}`)
	require.Equal(t, http.StatusCreated, before.Code)
	after := post("erp-new-token-0123456789", `{"customer":"erp"}`)
	require.Equal(t, "true", after.Header().Get(idempotency.HeaderReplayed), "a rotated token of the same caller")
	require.Equal(t, before.Body.String(), after.Body.String())
	require.EqualValues(t, 3, calls.Load())
}
