package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"handoff/pkg/integrationkit/logging"
)

// A line logged under a span carries its trace id beside the correlation id; a line
// logged outside any has neither.
func TestLinesCarryTheTraceID(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := logging.New(&out, "svc", slog.LevelInfo)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	ctx, span := tp.Tracer("test").Start(logging.WithCorrelationID(context.Background(), "req-1"), "work")
	defer span.End()

	log.InfoContext(ctx, "traced")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	require.Equal(t, span.SpanContext().TraceID().String(), line["trace_id"])
	require.Equal(t, "req-1", line["correlation_id"])

	out.Reset()
	log.Info("untraced")
	line = nil
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	require.NotContains(t, line, "trace_id")
	require.NotContains(t, line, "correlation_id")
}
