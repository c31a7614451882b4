package httpserver

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/tracing"
)

// Option adjusts the server New builds.
type Option func(*options)

type options struct {
	tracer trace.Tracer
}

// WithTracing makes each request a server span of tp, named by its method and route
// ("POST /v1/invoices/:id/payments"), that continues the caller's W3C traceparent when
// it sent a valid one. The probes (/healthz, /readyz, /metrics) are not traced. A nil
// tp leaves tracing off: no middleware is installed.
func WithTracing(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracer = tp.Tracer("handoff/pkg/integrationkit/httpserver")
		}
	}
}

// traced is the outermost middleware of a traced server, so the span covers the whole
// request and every log line written under it carries the trace. It hands any error
// that reaches it to the error handler itself, so the span records the final status.
func traced(tracer trace.Tracer) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			route := c.Path()
			if isProbe(route) {
				return next(c)
			}
			req := c.Request()
			name := req.Method
			if route != "" {
				name += " " + route
			}
			ctx, span := tracer.Start(tracing.Extract(req.Context(), req.Header), name,
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", req.Method),
					attribute.String("http.route", route), attribute.String("url.path", req.URL.Path)))
			defer span.End()
			c.SetRequest(req.WithContext(ctx))
			if err := next(c); err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			span.SetAttributes(attribute.Int("http.response.status_code", status),
				attribute.String("handoff.correlation_id", logging.CorrelationID(c.Request().Context())))
			if status >= 500 {
				span.SetStatus(codes.Error, "")
			}
			return nil
		}
	}
}

func isProbe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}
