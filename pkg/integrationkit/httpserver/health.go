package httpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
)

// ReadyCheck reports whether the service can do its work (database reachable,
// migrations current); it returns a short reason when not.
type ReadyCheck func(ctx context.Context) error

// Health registers /healthz (the process answers) and /readyz (ready answers nil).
func Health(e *echo.Echo, ready ReadyCheck) {
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			return problem.New(http.StatusServiceUnavailable, "not-ready", err.Error())
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})
}
