package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// OutboxCollector reads an outbox's depth and its circuits from the database at scrape
// time, within a short timeout; a failed read makes the scrape report an error for
// these series rather than stale values.
type OutboxCollector struct {
	db      bun.IDB
	store   *outbox.Store
	breaker *breaker.Breaker
	timeout time.Duration

	events  *prometheus.Desc
	oldest  *prometheus.Desc
	circuit *prometheus.Desc
}

// NewOutboxCollector returns the collector of store (and of br's circuits, when br is
// not nil) in namespace:
//
//	<ns>_outbox_events{status}             pending and failed events
//	<ns>_outbox_oldest_pending_seconds     age of the oldest pending event (0 if none)
//	<ns>_breaker_state{destination,state}  1 for each circuit's current state, else 0
func NewOutboxCollector(namespace string, db bun.IDB, store *outbox.Store, br *breaker.Breaker) *OutboxCollector {
	return &OutboxCollector{
		db: db, store: store, breaker: br, timeout: 2 * time.Second,
		events: prometheus.NewDesc(prometheus.BuildFQName(namespace, "outbox", "events"),
			"Events waiting in the outbox, by status (pending, failed).", []string{"status"}, nil),
		oldest: prometheus.NewDesc(prometheus.BuildFQName(namespace, "outbox", "oldest_pending_seconds"),
			"Age of the oldest pending event; 0 when none is pending.", nil, nil),
		circuit: prometheus.NewDesc(prometheus.BuildFQName(namespace, "breaker", "state"),
			"Circuit state per destination: 1 for the current state.", []string{"destination", "state"}, nil),
	}
}

// Describe sends the descriptors of the collected series.
func (c *OutboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.oldest
	ch <- c.circuit
}

// Collect reads the database and sends the series.
func (c *OutboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	d, err := c.store.Depth(ctx, c.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.events, err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(d.Pending), outbox.StatusPending)
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(d.Failed), outbox.StatusFailed)
		age := 0.0
		if d.Oldest != nil {
			age = d.Oldest.Age.Seconds()
		}
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	}
	if c.breaker == nil {
		return
	}
	circuits, err := c.breaker.Circuits(ctx, c.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.circuit, err)
		return
	}
	for _, cir := range circuits {
		for _, s := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
			v := 0.0
			if s == cir.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.circuit, prometheus.GaugeValue, v, cir.Destination, string(s))
		}
	}
}
