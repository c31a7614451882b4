package reconcile

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
)

// Collector exports the newest stored reconciliation at scrape time, so every replica
// reports the same result whichever of them ran it. Before the first run (or with
// reconciliation off) it exports nothing; a failed read makes the scrape report an
// error for these series rather than stale values.
type Collector struct {
	db      bun.IDB
	timeout time.Duration

	discrepancies *prometheus.Desc
	failed        *prometheus.Desc
	finished      *prometheus.Desc
}

// NewCollector returns the collector of the reports in db, in namespace:
//
//	<ns>_reconcile_discrepancies{kind}           missing, unknown, overdue of the newest finished run
//	<ns>_reconcile_failed                        1 when the newest run could not finish, else 0
//	<ns>_reconcile_last_run_timestamp_seconds    when the newest run ended
//
// The discrepancies are left out while the newest run failed: its counts mean nothing.
func NewCollector(namespace string, db bun.IDB) *Collector {
	return &Collector{
		db: db, timeout: 2 * time.Second,
		discrepancies: prometheus.NewDesc(prometheus.BuildFQName(namespace, "reconcile", "discrepancies"),
			"Discrepancies found by the newest finished reconciliation, by kind (missing, unknown, overdue).",
			[]string{"kind"}, nil),
		failed: prometheus.NewDesc(prometheus.BuildFQName(namespace, "reconcile", "failed"),
			"1 when the newest reconciliation could not finish, else 0.", nil, nil),
		finished: prometheus.NewDesc(prometheus.BuildFQName(namespace, "reconcile", "last_run_timestamp_seconds"),
			"When the newest reconciliation ended, in seconds since the epoch.", nil, nil),
	}
}

// Describe sends the descriptors of the collected series.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.discrepancies
	ch <- c.failed
	ch <- c.finished
}

// Collect reads the newest report and sends its series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rep, ok, err := Latest(ctx, c.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.failed, err)
		return
	}
	if !ok {
		return
	}
	failed := 0.0
	if rep.Error != "" {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(c.finished, prometheus.GaugeValue, float64(rep.FinishedAt.UnixMilli())/1000)
	if rep.Error != "" {
		return
	}
	for kind, n := range map[string]int{"missing": rep.MissingCount, "unknown": rep.UnknownCount, "overdue": rep.OverdueCount} {
		ch <- prometheus.MustNewConstMetric(c.discrepancies, prometheus.GaugeValue, float64(n), kind)
	}
}
