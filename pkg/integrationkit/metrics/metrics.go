// Package metrics exposes the services' Prometheus metrics on GET /metrics,
// each service with a registry of its own (never the global one).
//
// For a sender: Delivery observes the dispatcher (deliveries by outcome, request
// latency, end-to-end latency from the event's creation to its delivery) and
// OutboxCollector reads the outbox depth, the oldest pending age and the circuit
// states from the database at scrape time. For a receiver: Webhook counts webhook
// answers by status, duplicates and handler latency. For every server: HTTP counts
// and times each request by route pattern, method and status.
//
// /metrics is unauthenticated: serve it only on the service's own port, which is not
// meant to be exposed beyond the operators' network.
package metrics

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// NewRegistry returns a registry holding the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Register serves reg on GET /metrics of e.
func Register(e *echo.Echo, reg *prometheus.Registry) {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, ErrorHandling: promhttp.ContinueOnError})
	e.GET(Path, echo.WrapHandler(h))
}

// latencyBuckets span a millisecond to a minute: one request, or one event's way
// through a backlog.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// endToEndBuckets span ten milliseconds to four hours: from an instant hand-over to
// the last step of the retry schedule.
var endToEndBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 14400}
