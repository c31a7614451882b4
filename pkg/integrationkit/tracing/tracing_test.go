package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/tracing"
)

func load(t *testing.T, environ ...string) (tracing.Config, error) {
	t.Helper()
	var c tracing.Config
	err := envconf.Set{Settings: c.Settings("svc")}.Load(environ, "serve")
	return c, err
}

func TestSettings(t *testing.T) {
	t.Parallel()
	c, err := load(t)
	require.NoError(t, err)
	require.Equal(t, tracing.Config{ServiceName: "svc", ScheduleDelay: tracing.DefaultScheduleDelay}, c, "off by default")

	c, err = load(t, "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_SERVICE_NAME=finance-eu",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20abc, x-tenant = t1", "OTEL_BSP_SCHEDULE_DELAY=200",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod")
	require.NoError(t, err)
	require.Equal(t, tracing.Config{Endpoint: "http://collector:4318", ServiceName: "finance-eu",
		Headers:            map[string]string{"authorization": "Bearer abc", "x-tenant": "t1"},
		ResourceAttributes: []attribute.KeyValue{attribute.String("deployment.environment", "prod")},
		ScheduleDelay:      200 * time.Millisecond}, c)

	for _, bad := range []struct{ env, want string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT: want an absolute http(s) URL"},
		{"OTEL_EXPORTER_OTLP_HEADERS=authorization", "OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value"},
		{"OTEL_EXPORTER_OTLP_HEADERS=a=%zz-secret", "OTEL_EXPORTER_OTLP_HEADERS: entry 1 (a): the value is not URL-encoded"},
		{"OTEL_BSP_SCHEDULE_DELAY=5s", `OTEL_BSP_SCHEDULE_DELAY: want whole milliseconds, at least 10, got "5s"`},
		{"OTEL_TRACES_SAMPLER=always_off", "OTEL_TRACES_SAMPLER: unknown variable; did you mean"},
	} {
		_, err := load(t, bad.env)
		require.ErrorContains(t, err, bad.want, bad.env)
		require.NotContains(t, err.Error(), "secret", "a header value is never repeated")
	}
}

func TestOffStartsNothing(t *testing.T) {
	t.Parallel()
	p, err := tracing.Start(context.Background(), tracing.Config{ServiceName: "svc"}, "v1", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, p.TracerProvider())
	require.NoError(t, p.Shutdown(context.Background()))
}

// collector is an OTLP/HTTP receiver of traces: it decodes each export and hands it
// on, with the request's headers.
type collector struct {
	url     string
	exports chan *coltracepb.ExportTraceServiceRequest
	headers chan http.Header
}

// newCollector serves a collector until the test ends; answer, when set, may answer a
// request itself (returning true) instead.
func newCollector(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool) *collector {
	t.Helper()
	c := &collector{exports: make(chan *coltracepb.ExportTraceServiceRequest, 8), headers: make(chan http.Header, 8)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer != nil && answer(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.exports <- &req
		c.headers <- r.Header
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// Spans wait in the batch for their schedule; Shutdown exports them at once, to
// <endpoint>/v1/traces with the configured headers and the service's resource.
func TestShutdownFlushesQueuedSpans(t *testing.T) {
	t.Parallel()
	c := newCollector(t, nil)
	p, err := tracing.Start(context.Background(), tracing.Config{Endpoint: c.url + "/", ServiceName: "svc",
		Headers: map[string]string{"Authorization": "Bearer abc"}, ScheduleDelay: time.Hour}, "v1.2.3",
		slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "work")
	span.End()
	select {
	case <-c.exports:
		t.Fatal("exported before the schedule")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, p.Shutdown(context.Background()))

	req := <-c.exports
	require.Equal(t, "Bearer abc", (<-c.headers).Get("Authorization"))
	require.Len(t, req.ResourceSpans, 1)
	attrs := map[string]string{}
	for _, kv := range req.ResourceSpans[0].Resource.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	require.Equal(t, "svc", attrs["service.name"])
	require.Equal(t, "v1.2.3", attrs["service.version"])
	require.Equal(t, "work", req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name)
}

// A collector that does not answer holds Shutdown no longer than its context.
func TestShutdownIsBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c := newCollector(t, func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	t.Cleanup(func() { close(release) })
	p, err := tracing.Start(context.Background(), tracing.Config{Endpoint: c.url, ServiceName: "svc",
		ScheduleDelay: time.Hour}, "v1", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "work")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.Error(t, p.Shutdown(ctx))
	require.Less(t, time.Since(start), 2*time.Second)
}
