package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HeaderTraceparent is the W3C Trace Context header: version, trace id, parent span id
// and flags, e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.
const HeaderTraceparent = "traceparent"

// w3c reads and writes traceparent (and tracestate); no process-wide propagator is
// involved.
var w3c = propagation.TraceContext{}

// Traceparent returns the traceparent of ctx's span, or "" when ctx carries no valid
// span context.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	return carrier[HeaderTraceparent]
}

// Remote returns ctx with the span context that traceparent names as its remote
// parent; ctx as it is when traceparent is empty or malformed.
func Remote(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{HeaderTraceparent: traceparent})
}

// Inject writes the traceparent (and tracestate) of ctx's span into h; nothing when
// ctx carries no valid span context.
func Inject(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent, if it holds a
// valid one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// Child starts a span named name under ctx's span, with the tracer of the provider
// that made that span (scope names the instrumentation). Under no span it is otel's
// no-op: no allocation beyond the returned context.
func Child(ctx context.Context, scope, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(scope).Start(ctx, name, opts...)
}

// End ends span, recording err and marking the span failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
