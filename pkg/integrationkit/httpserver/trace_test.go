package httpserver_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/tracing"
)

// A traced server makes each request but the probes a server span named by its
// route, continuing the caller's traceparent, with the final status (the error
// handler's too); a handler sees the span in its request's context.
func TestWithTracingMakesASpanPerRequest(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	e := httpserver.New(slog.New(slog.DiscardHandler), httpserver.WithTracing(tp))
	httpserver.Health(e, nil)
	var seen string
	e.POST("/things/:id", func(c echo.Context) error {
		seen = tracing.Traceparent(c.Request().Context())
		return c.NoContent(http.StatusCreated)
	})
	e.GET("/broken", func(echo.Context) error { return errors.New("boom") })

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	serve := func(method, path, traceparent string) int {
		req := httptest.NewRequest(method, path, nil)
		if traceparent != "" {
			req.Header.Set(tracing.HeaderTraceparent, traceparent)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusCreated, serve(http.MethodPost, "/things/7", caller))
	require.Equal(t, http.StatusInternalServerError, serve(http.MethodGet, "/broken", ""))
	require.Equal(t, http.StatusOK, serve(http.MethodGet, "/healthz", caller))

	got := spans.GetSpans()
	require.Len(t, got, 2, "the probe is not traced")
	things, broken := got[0], got[1]
	require.Equal(t, "POST /things/:id", things.Name)
	require.Equal(t, trace.SpanKindServer, things.SpanKind)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", things.SpanContext.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", things.Parent.SpanID().String())
	require.True(t, things.Parent.IsRemote())
	require.Contains(t, things.Attributes, attribute.Int("http.response.status_code", http.StatusCreated))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-"+things.SpanContext.SpanID().String()+"-01", seen)

	require.Equal(t, "GET /broken", broken.Name)
	require.False(t, broken.Parent.IsValid(), "without a traceparent the request starts a trace")
	require.Contains(t, broken.Attributes, attribute.Int("http.response.status_code", http.StatusInternalServerError))
	require.Equal(t, codes.Error, broken.Status.Code)
}
