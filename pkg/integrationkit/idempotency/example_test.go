package idempotency_test

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/idempotency"
)

// A service mounts the middleware after authentication on the POST routes whose
// retries must not repeat their effect.
func Example() {
	var db *bun.DB // the service's database, with an idempotency_keys table
	tokens, _ := auth.ParseTokens("clerk:a-long-secret-token-0001", "clerk")

	keys, err := idempotency.New(db, idempotency.Config{Logger: slog.Default()})
	if err != nil {
		panic(err)
	}
	e := httpserver.New(slog.Default())
	e.POST("/v1/orders", func(c echo.Context) error {
		return c.JSON(http.StatusCreated, map[string]string{"status": "created"})
	}, tokens.Require("clerk"), keys.Handler())
}
