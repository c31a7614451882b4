package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// Delivery observes a dispatcher (it implements delivery.Observer): only in-memory
// counters and histograms, so it never blocks.
type Delivery struct {
	deliveries  *prometheus.CounterVec
	latency     prometheus.Histogram
	endToEnd    prometheus.Histogram
	transitions *prometheus.CounterVec
}

// NewDelivery registers the delivery metrics of namespace (e.g. "finance") with reg:
//
//	<ns>_deliveries_total{outcome,answer}      settled attempts and deferrals
//	<ns>_delivery_duration_seconds             one request, answer read
//	<ns>_delivery_end_to_end_seconds           event written → delivered
//	<ns>_circuit_transitions_total{destination,transition}
//
// outcome is delivered, retry, dead_letter or deferred (circuit open, no request);
// answer is the HTTP status, or the transport error class (timeout, …), or none.
func NewDelivery(reg prometheus.Registerer, namespace string) *Delivery {
	d := &Delivery{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "deliveries_total",
			Help: "Settled delivery attempts and deferrals, by outcome and answer.",
		}, []string{"outcome", "answer"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "delivery_duration_seconds",
			Help: "Duration of one delivery request, response read.", Buckets: latencyBuckets,
		}),
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "delivery_end_to_end_seconds",
			Help: "Time from an event's creation to its delivery.", Buckets: endToEndBuckets,
		}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "circuit_transitions_total",
			Help: "Circuit breaker transitions, by destination and transition.",
		}, []string{"destination", "transition"}),
	}
	reg.MustRegister(d.deliveries, d.latency, d.endToEnd, d.transitions)
	return d
}

// Settled counts one settled outcome.
func (d *Delivery) Settled(_ context.Context, rec outbox.Record, out outbox.Outcome) {
	d.deliveries.WithLabelValues(outcomeLabel(out), answerLabel(out)).Inc()
	if out.Sent {
		d.latency.Observe(out.Duration.Seconds())
	}
	if out.Status == outbox.StatusDelivered {
		d.endToEnd.Observe(time.Since(rec.CreatedAt).Seconds())
	}
}

// CircuitChanged counts one transition.
func (d *Delivery) CircuitChanged(_ context.Context, destination string, tr breaker.Transition, _ outbox.Record) {
	d.transitions.WithLabelValues(destination, string(tr)).Inc()
}

func outcomeLabel(out outbox.Outcome) string {
	switch {
	case out.Status == outbox.StatusDelivered:
		return "delivered"
	case out.Status == outbox.StatusFailed:
		return "dead_letter"
	case !out.Sent:
		return "deferred"
	default:
		return "retry"
	}
}

func answerLabel(out outbox.Outcome) string {
	switch {
	case out.StatusCode != 0:
		return strconv.Itoa(out.StatusCode)
	case out.ErrorClass != "":
		return out.ErrorClass
	default:
		return "none"
	}
}
