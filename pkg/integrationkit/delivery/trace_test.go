package delivery_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/tracing"
	"handoff/pkg/integrationkit/webhook"
)

// traceBundle is an outbox, a tracer provider exporting into memory, and a receiver
// that checks the signature, then continues the trace of each request's traceparent
// with a "receive" span of the same provider.
type traceBundle struct {
	*bundle
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider

	mu      sync.Mutex
	headers []string // the traceparent of each request, "" when absent
	// changed fires at each span exported and each request received.
	changed signal
}

// signalling exports into memory, then fires.
type signalling struct {
	*tracetest.InMemoryExporter
	exported *signal
}

func (e signalling) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	defer e.exported.fire()
	return e.InMemoryExporter.ExportSpans(ctx, spans)
}

func setupTrace(t *testing.T) *traceBundle {
	t.Helper()
	b := &traceBundle{bundle: newBundle(t), spans: tracetest.NewInMemoryExporter()}
	b.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(signalling{InMemoryExporter: b.spans, exported: &b.changed}))
	t.Cleanup(func() { require.NoError(t, b.tp.Shutdown(context.Background())) })
	b.serve(t, http.HandlerFunc(b.receive))
	return b
}

func (b *traceBundle) receive(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := webhook.NewVerifier([][]byte{secret}).Verify(r.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized) // the traceparent is no part of the signature
		return
	}
	b.mu.Lock()
	b.headers = append(b.headers, r.Header.Get(tracing.HeaderTraceparent))
	b.mu.Unlock()
	b.changed.fire()
	_, span := b.tp.Tracer("receiver").Start(tracing.Extract(r.Context(), r.Header), "receive",
		trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	acceptAll(w, r, body)
}

// request writes one event of aggregate under a "request" span of its own, as a
// traced API handler does, and returns that span's context.
func (b *traceBundle) request(t *testing.T, aggregate string) trace.SpanContext {
	t.Helper()
	ctx, span := b.tp.Tracer("api").Start(context.Background(), "request", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	b.enqueueIn(t, ctx, aggregate)
	return span.SpanContext()
}

// enqueueIn writes one event of aggregate in a transaction of ctx, traced when ctx
// holds a span.
func (b *traceBundle) enqueueIn(t *testing.T, ctx context.Context, aggregate string) {
	t.Helper()
	err := b.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := b.store.Enqueue(ctx, tx, outbox.Event{Type: "thing.happened", AggregateKey: aggregate, Sequence: 1,
			IdempotencyKey: "thing.happened:" + aggregate, Destination: b.url, Payload: map[string]any{}})
		return err
	})
	require.NoError(t, err)
}

// deliver delivers with a dispatcher in mode, traced by tp (nil: untraced), until the
// test ends.
func (b *traceBundle) deliver(t *testing.T, mode string, tp trace.TracerProvider) {
	t.Helper()
	b.runWith(t, delivery.Config{Mode: mode, Interval: time.Second, Backoff: backoff.Schedule{20 * time.Millisecond}},
		delivery.Deps{TracerProvider: tp})
}

// waitFor waits until the exporter holds n spans named name and returns every span.
func (b *traceBundle) waitFor(t *testing.T, name string, n int) tracetest.SpanStubs {
	t.Helper()
	var spans tracetest.SpanStubs
	if !b.changed.await(10*time.Second, func() bool {
		spans = b.spans.GetSpans()
		return len(named(spans, name)) >= n
	}) {
		t.Fatalf("no %d %q spans within 10 s", n, name)
	}
	return spans
}

func (b *traceBundle) traceparents() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.headers)
}

func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only span named name.
func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	found := named(spans, name)
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// The traceparent travels from the writer's span through the row and the request's
// header to the receiver: one trace, request → outbox.enqueue → outbox.claim and
// delivery.deliver → delivery.send → receive, with outbox.settle under the delivery.
// A batch of one is traced as a single event.
func TestDeliveryContinuesTheWritersTrace(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode string) {
		b := setupTrace(t)
		req := b.request(t, "agg-1")
		var stored string
		require.NoError(t, b.db.NewRaw(`SELECT traceparent FROM kit_outbox`).Scan(context.Background(), &stored))
		b.deliver(t, mode, b.tp)

		spans := b.waitFor(t, "delivery.deliver", 1)
		enqueue, claim := one(t, spans, "outbox.enqueue"), one(t, spans, "outbox.claim")
		deliver, send := one(t, spans, "delivery.deliver"), one(t, spans, "delivery.send")
		settle, receive := one(t, spans, "outbox.settle"), one(t, spans, "receive")
		for _, s := range []tracetest.SpanStub{enqueue, claim, deliver, send, settle, receive} {
			require.Equal(t, req.TraceID(), s.SpanContext.TraceID(), "%s is in the request's trace", s.Name)
		}
		require.Equal(t, req.SpanID(), enqueue.Parent.SpanID())
		require.Equal(t, enqueue.SpanContext.SpanID(), claim.Parent.SpanID())
		require.Equal(t, enqueue.SpanContext.SpanID(), deliver.Parent.SpanID())
		require.Equal(t, deliver.SpanContext.SpanID(), send.Parent.SpanID())
		require.Equal(t, deliver.SpanContext.SpanID(), settle.Parent.SpanID())
		require.Equal(t, send.SpanContext.SpanID(), receive.Parent.SpanID(), "the receiver continues the send span")
		require.True(t, receive.Parent.IsRemote())
		require.Equal(t, trace.SpanKindClient, send.SpanKind)

		require.Equal(t, "00-"+req.TraceID().String()+"-"+enqueue.SpanContext.SpanID().String()+"-01", stored,
			"the row keeps the outbox.enqueue span's context")
		require.Equal(t, []string{"00-" + req.TraceID().String() + "-" + send.SpanContext.SpanID().String() + "-01"},
			b.traceparents())
	})
}

// A batch of events from two traces starts a trace of its own that links to each
// event's outbox.enqueue span; the receiver continues the batch's trace, and each
// event's claim stays in its own.
func TestBatchOfSeveralTracesLinksEachEvent(t *testing.T) {
	t.Parallel()
	b := setupTrace(t)
	first, second := b.request(t, "agg-1"), b.request(t, "agg-2")
	b.deliver(t, delivery.ModeBatch, b.tp)

	spans := b.waitFor(t, "delivery.deliver", 1)
	deliver, send, receive := one(t, spans, "delivery.deliver"), one(t, spans, "delivery.send"), one(t, spans, "receive")
	require.False(t, deliver.Parent.IsValid(), "a batch of two traces is a root")
	require.NotEqual(t, first.TraceID(), deliver.SpanContext.TraceID())
	require.NotEqual(t, second.TraceID(), deliver.SpanContext.TraceID())
	var linked []trace.TraceID
	for _, l := range deliver.Links {
		linked = append(linked, l.SpanContext.TraceID())
	}
	require.ElementsMatch(t, []trace.TraceID{first.TraceID(), second.TraceID()}, linked)
	require.Equal(t, deliver.SpanContext.TraceID(), send.SpanContext.TraceID())
	require.Equal(t, send.SpanContext.SpanID(), receive.Parent.SpanID())

	var claimed []trace.TraceID
	for _, c := range named(spans, "outbox.claim") {
		claimed = append(claimed, c.SpanContext.TraceID())
	}
	require.ElementsMatch(t, []trace.TraceID{first.TraceID(), second.TraceID()}, claimed)
}

// A dispatcher without a tracer starts no span and passes the stored traceparent on
// as it is; an event written outside any trace is sent without one.
func TestUntracedDispatcherPassesTheStoredContextOn(t *testing.T) {
	t.Parallel()
	b := setupTrace(t)
	b.request(t, "agg-1")
	b.enqueueIn(t, context.Background(), "agg-2")
	var stored []string
	require.NoError(t, b.db.NewRaw(`SELECT coalesce(traceparent, 'NULL') FROM kit_outbox ORDER BY aggregate_key`).
		Scan(context.Background(), &stored))
	require.Len(t, stored, 2)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, stored[0])
	require.Equal(t, "NULL", stored[1], "written untraced")
	b.deliver(t, delivery.ModeSingle, nil)

	require.True(t, b.changed.await(10*time.Second, func() bool { return len(b.traceparents()) == 2 }), "two requests within 10 s")
	require.ElementsMatch(t, []string{stored[0], ""}, b.traceparents())
	spans := b.spans.GetSpans()
	require.Empty(t, named(spans, "delivery.deliver"))
	require.Empty(t, named(spans, "outbox.claim"))
}
