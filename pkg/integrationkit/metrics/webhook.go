package metrics

import (
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Webhook measures a webhook receiver.
type Webhook struct {
	requests   *prometheus.CounterVec
	duplicates prometheus.Counter
	duration   prometheus.Histogram
}

// NewWebhook registers the receiver metrics of namespace with reg:
//
//	<ns>_webhook_requests_total{status}   answers by HTTP status
//	<ns>_webhook_duplicates_total         events already processed (answered 200, nothing applied)
//	<ns>_webhook_duration_seconds         handler latency
func NewWebhook(reg prometheus.Registerer, namespace string) *Webhook {
	w := &Webhook{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhook_requests_total",
			Help: "Webhook requests answered, by HTTP status.",
		}, []string{"status"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhook_duplicates_total",
			Help: "Webhook events whose key was already processed: answered, nothing applied.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "webhook_duration_seconds",
			Help: "Webhook handler latency, answer written.", Buckets: latencyBuckets,
		}),
	}
	reg.MustRegister(w.requests, w.duplicates, w.duration)
	return w
}

// Processed counts one processed event; duplicate says nothing was applied.
func (w *Webhook) Processed(duplicate bool) {
	if duplicate {
		w.duplicates.Inc()
	}
}

// Middleware measures the requests whose route is one of paths. It writes a handler's
// error through echo's error handler itself, so the status it counts is the one sent.
func (w *Webhook) Middleware(paths ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !slices.Contains(paths, c.Path()) {
				return next(c)
			}
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			w.duration.Observe(time.Since(start).Seconds())
			w.requests.WithLabelValues(strconv.Itoa(c.Response().Status)).Inc()
			return nil
		}
	}
}
