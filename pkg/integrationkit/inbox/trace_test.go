package inbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"handoff/pkg/integrationkit/inbox"
)

// Under a traced request, Process and ProcessBatch are spans of its trace covering
// their transaction; under none they trace nothing.
func TestProcessIsASpanOfTheCallersTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })

	ctx, req := tp.Tracer("test").Start(context.Background(), "request")
	_, err := b.in.Process(ctx, b.db, item(t, "k1", `{"a":1}`), effect("k1", ""))
	require.NoError(t, err)
	_, err = b.in.ProcessBatch(ctx, b.db, []inbox.Item{item(t, "k2", `{"a":2}`)},
		func(context.Context, bun.Tx, []int) ([]inbox.ItemResult, error) { return []inbox.ItemResult{{}}, nil })
	require.NoError(t, err)
	req.End()
	_, err = b.in.Process(context.Background(), b.db, item(t, "k3", `{"a":3}`), effect("k3", ""))
	require.NoError(t, err)

	got := spans.GetSpans()
	require.Len(t, got, 3)
	require.Equal(t, "inbox.process", got[0].Name)
	require.Equal(t, "inbox.process_batch", got[1].Name)
	for _, s := range got[:2] {
		require.Equal(t, req.SpanContext().SpanID(), s.Parent.SpanID(), s.Name)
		require.Equal(t, req.SpanContext().TraceID(), s.SpanContext.TraceID(), s.Name)
	}
	require.Equal(t, "request", got[2].Name)
}
