package metrics

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Unmatched is the route label of a request that matched no route: every unknown path
// shares it, so a client probing paths cannot grow the series without bound.
const Unmatched = "unmatched"

// HTTP measures every request an echo server answers.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP registers the request metrics of namespace with reg:
//
//	<ns>_http_requests_total{route,method,status}            requests answered
//	<ns>_http_request_duration_seconds{route,method,status}  answer written
//
// route is the route pattern the request matched (/v1/invoices/:id), never the raw
// path, or Unmatched; method is one of the standard methods or "other"; status is the
// HTTP status sent.
func NewHTTP(reg prometheus.Registerer, namespace string) *HTTP {
	labels := []string{"route", "method", "status"}
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by route pattern, method and status.", Buckets: latencyBuckets,
		}, labels),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// Middleware measures every request. Like Webhook's, it writes a handler's error
// through echo's error handler itself, so the status it counts is the one sent; a
// panic counts as the 500 that the recovery middleware outside it answers.
func (h *HTTP) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			start := time.Now()
			status := 0
			defer func() {
				if status == 0 { // next panicked: the recovery middleware answers 500
					status = http.StatusInternalServerError
				}
				h.observe(c, err, status, time.Since(start))
			}()
			if err = next(c); err != nil {
				c.Error(err)
			}
			status = c.Response().Status
			return nil
		}
	}
}

// observe counts one answer; err is the handler's, before the error handler wrote it.
func (h *HTTP) observe(c echo.Context, err error, status int, took time.Duration) {
	route := c.Path()
	// The router answers a path it does not know with echo.ErrNotFound (and c.Path()
	// is then empty or the pattern of the closest route, which would be misleading).
	if route == "" || errors.Is(err, echo.ErrNotFound) {
		route = Unmatched
	}
	labels := prometheus.Labels{"route": route, "method": methodLabel(c.Request().Method), "status": strconv.Itoa(status)}
	h.requests.With(labels).Inc()
	h.duration.With(labels).Observe(took.Seconds())
}

// methodLabel bounds the method label: a client may send any token as a method.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	default:
		return "other"
	}
}
