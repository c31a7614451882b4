// Package logging builds the JSON slog logger of the services and carries one
// correlation id through a request's context into every log line written under it,
// with the trace id of the context's span when it is traced.
package logging

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type ctxKey struct{}

// WithCorrelationID returns ctx carrying id.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// CorrelationID returns the id carried by ctx, or "".
func CorrelationID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// New returns a JSON logger writing to w at level that adds correlation_id to every
// record logged with a context that carries one, trace_id to every record logged under
// a span (package tracing), and service to every record.
func New(w io.Writer, service string, level slog.Leveler) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(correlated{h}).With("service", service)
}

// OrDiscard returns log, or a logger that discards every record when log is nil: the
// logger of a component whose caller gave it none.
func OrDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

type correlated struct{ slog.Handler }

func (c correlated) Handle(ctx context.Context, r slog.Record) error {
	if id := CorrelationID(ctx); id != "" {
		r.AddAttrs(slog.String("correlation_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
	}
	return c.Handler.Handle(ctx, r)
}

func (c correlated) WithAttrs(attrs []slog.Attr) slog.Handler {
	return correlated{c.Handler.WithAttrs(attrs)}
}

func (c correlated) WithGroup(name string) slog.Handler {
	return correlated{c.Handler.WithGroup(name)}
}
