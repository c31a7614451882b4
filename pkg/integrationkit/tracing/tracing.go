// Package tracing is the services' OpenTelemetry: a tracer provider that exports spans
// over OTLP/HTTP when an endpoint is configured and is absent otherwise, and the W3C
// trace context (the traceparent header) carried across a request, an outbox row and a
// delivery.
//
// The kit's components take a trace.TracerProvider where they start spans of their
// own (delivery.Deps, httpserver.WithTracing) and take nil as tracing off: they then
// start no span and parse no header, so a service without an endpoint pays nothing
// per request or event. Components that run under a caller's span (the outbox's
// Enqueue, the inbox) start theirs with the tracer of that span, and do nothing
// measurable under none.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Provider is a service's tracer provider and the means to flush it.
type Provider struct {
	sdk *sdktrace.TracerProvider // nil when tracing is off
	log *slog.Logger
}

// Start returns the provider cfg describes: with cfg.Endpoint empty, an off one that
// exports nothing; otherwise an SDK provider whose batch span processor exports to
// cfg.Endpoint + "/v1/traces" every cfg.ScheduleDelay, every span sampled unless its
// remote parent was not (parent-based, always on). version becomes service.version.
//
// Export errors go to log: Start installs otel's process-wide error handler, the only
// way the SDK reports them.
func Start(ctx context.Context, cfg Config, version string, log *slog.Logger) (*Provider, error) {
	if cfg.Endpoint == "" {
		return &Provider{log: log}, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/") + "/v1/traces")}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	attrs := append([]attribute.KeyValue{
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("service.version", version),
	}, cfg.ResourceAttributes...)
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: export failed", "err", err)
	}))
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(cfg.ScheduleDelay)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	)
	return &Provider{sdk: sdk, log: log}, nil
}

// TracerProvider returns the provider to hand the kit's components, or nil when
// tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p.sdk == nil {
		return nil
	}
	return p.sdk
}

// CloseTimeout bounds Close: a collector that does not answer must not hold up a
// service's stop on SIGTERM.
const CloseTimeout = 5 * time.Second

// Close is Shutdown within CloseTimeout, deferred by a service once everything that
// makes spans has stopped. A failure is logged and not returned: lost spans must not
// turn a clean stop into a failed one.
func (p *Provider) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		p.log.Warn("spans lost at exit", "err", err)
	}
}

// Shutdown exports the spans still queued and stops the provider, giving up when ctx
// ends: a collector that does not answer must not hold a service's exit. An off
// provider returns nil at once.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("tracing: spans not flushed in time: %w", err)
		}
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}
