package delivery

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/tracing"
)

// The dispatcher's spans continue the trace each event was written under (its
// outbox.enqueue span, kept in the row as a traceparent):
//
//	outbox.enqueue                (the writer's request)
//	├── outbox.claim              the claim statement that leased the event
//	└── delivery.deliver          one attempt: circuit, request, settlement
//	    ├── delivery.send         the HTTP request; its context is the traceparent sent
//	    └── outbox.settle         the settlement statement
//
// A batch is one delivery.deliver of many events. When they all belong to one trace it
// is a child of the first event's context; otherwise it starts a trace of its own. In
// both cases it links to every event's context when it carries more than one, so each
// event's trace leads to the request that carried it and to the receiver's work, which
// continues the batch's span. An event written untraced is delivered untraced: no
// span, no traceparent. A dispatcher without a tracer starts no span and passes the
// stored traceparent on as it is, for a single event (and a batch of one).

// tracerScope names the dispatcher's spans' instrumentation.
const tracerScope = "handoff/pkg/integrationkit/delivery"

// untraced is the no-op span of work outside any trace.
var untraced = trace.SpanFromContext(context.Background())

// traceClaim gives each traced event of one claim an outbox.claim span spanning the
// statement, from start to end: the statement served every one of their traces.
func (d *Dispatcher) traceClaim(recs []outbox.Record, start, end time.Time) {
	if d.tracer == nil {
		return
	}
	for _, rec := range recs {
		if rec.Traceparent == "" {
			continue
		}
		_, span := d.tracer.Start(tracing.Remote(context.Background(), rec.Traceparent), "outbox.claim",
			trace.WithTimestamp(start), trace.WithAttributes(append(eventAttributes(rec),
				attribute.Int("handoff.claim.events", len(recs)), attribute.String("handoff.lease.owner", d.cfg.Owner))...))
		span.End(trace.WithTimestamp(end))
	}
}

// startDeliver starts the delivery.deliver span of one event under its stored context.
func (d *Dispatcher) startDeliver(ctx context.Context, rec outbox.Record) (context.Context, trace.Span) {
	if d.tracer == nil || rec.Traceparent == "" {
		return ctx, untraced
	}
	return d.tracer.Start(tracing.Remote(ctx, rec.Traceparent), "delivery.deliver",
		trace.WithAttributes(eventAttributes(rec)...))
}

// startDeliverBatch starts the delivery.deliver span of a batch (see the rule above).
func (d *Dispatcher) startDeliverBatch(ctx context.Context, recs []outbox.Record) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, untraced
	}
	var links []trace.Link
	var first trace.SpanContext
	oneTrace := true
	for _, rec := range recs {
		sc := trace.SpanContextFromContext(tracing.Remote(context.Background(), rec.Traceparent))
		switch {
		case !sc.IsValid():
			oneTrace = false
			continue
		case !first.IsValid():
			first = sc
		case sc.TraceID() != first.TraceID():
			oneTrace = false
		}
		links = append(links, trace.Link{SpanContext: sc})
	}
	if len(links) == 0 {
		return ctx, untraced
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attribute.Int("messaging.batch.message_count", len(recs)))}
	if len(recs) > 1 {
		opts = append(opts, trace.WithLinks(links...))
	}
	if oneTrace {
		ctx = trace.ContextWithRemoteSpanContext(ctx, first)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return d.tracer.Start(ctx, "delivery.deliver", opts...)
}

// startSend starts the delivery.send span of a request under ctx's delivery span.
func (d *Dispatcher) startSend(ctx context.Context, url string) (context.Context, trace.Span) {
	if d.tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, untraced
	}
	return d.tracer.Start(ctx, "delivery.send", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("url.full", url)))
}

// propagate sets the request's traceparent: that of ctx's send span, or without one
// the stored context as it is.
func propagate(ctx context.Context, h http.Header, stored string) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		tracing.Inject(ctx, h)
		return
	}
	if stored != "" {
		h.Set(tracing.HeaderTraceparent, stored)
	}
}

// endSend ends a send span with the answer's status or the transport error.
func endSend(span trace.Span, res response) {
	if span.IsRecording() {
		if res.status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", res.status))
		}
		if res.err != nil {
			span.SetAttributes(attribute.String("error.type", ErrorClass(res.err)))
		} else if res.status >= 400 {
			span.SetAttributes(attribute.String("error.type", http.StatusText(res.status)))
		}
	}
	switch {
	case res.err != nil:
		tracing.End(span, res.err)
	case res.status >= 400:
		span.SetStatus(codes.Error, http.StatusText(res.status))
		span.End()
	default:
		span.End()
	}
}

// startSettle starts the outbox.settle span of a settlement under ctx's delivery span.
func (d *Dispatcher) startSettle(ctx context.Context, events int) (context.Context, trace.Span) {
	if d.tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, untraced
	}
	return d.tracer.Start(ctx, "outbox.settle", trace.WithAttributes(attribute.Int("handoff.settle.events", events)))
}

// recordOutcome notes an event's outcome on its delivery span: an outcome other than
// delivered marks the span failed.
func recordOutcome(span trace.Span, out outbox.Outcome) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("handoff.outcome", out.Label), attribute.String("handoff.delivery_status", out.Status))
	if out.Status != outbox.StatusDelivered {
		span.SetStatus(codes.Error, out.Label)
	}
}

func eventAttributes(rec outbox.Record) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.message.id", rec.ID.String()),
		attribute.String("handoff.event.type", rec.EventType),
		attribute.String("handoff.idempotency_key", rec.IdempotencyKey),
		attribute.Int("handoff.attempt", rec.Requests+1),
	}
}
