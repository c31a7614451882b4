package idempotency_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pgtest"
)

// A service mounts the middleware after authentication on the POST routes whose
// retries must not repeat their effect: a retry under the same key gets the stored
// response, marked replayed, and the handler does not run again.
func Example() {
	db, done := pgtest.ForExample("idempotency", idempotency.Schema(idempotency.DefaultTable))
	defer done()
	tokens, _ := auth.ParseTokens("clerk:a-long-secret-token-0001", "clerk")

	keys, err := idempotency.New(db, idempotency.Config{Logger: slog.Default()})
	if err != nil {
		panic(err)
	}
	e := httpserver.New(slog.Default())
	created := 0
	e.POST("/v1/orders", func(c echo.Context) error {
		created++
		return c.JSON(http.StatusCreated, map[string]int{"order": created})
	}, tokens.Require("clerk"), keys.Handler())

	for range 2 { // the client retries: the first answer was lost
		req := httptest.NewRequest(http.MethodPost, "/v1/orders", strings.NewReader(`{"item":"book"}`))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		req.Header.Set(echo.HeaderAuthorization, "Bearer a-long-secret-token-0001")
		req.Header.Set(idempotency.HeaderKey, "order-7f3c")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()), "replayed:", rec.Header().Get(idempotency.HeaderReplayed) == "true")
	}
	fmt.Println("orders created:", created)
	// Output:
	// 201 {"order":1} replayed: false
	// 201 {"order":1} replayed: true
	// orders created: 1
}
