package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"handoff/pkg/integrationkit/retention"
)

// Retention counts a service's scheduled retention runs (it implements
// retention.Observer).
type Retention struct {
	runs *prometheus.CounterVec
}

// The results of a run, the values of the result label.
const (
	retentionOK      = "ok"
	retentionFailed  = "failed"
	retentionSkipped = "skipped"
)

// NewRetention registers the retention metric of namespace with reg:
//
//	<ns>_retention_runs_total{result}   scheduled runs: ok, failed, or skipped (another replica ran)
//
// Every result starts at 0, so the first failure is an increase an alert can see.
func NewRetention(reg prometheus.Registerer, namespace string) *Retention {
	r := &Retention{runs: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "retention_runs_total",
		Help: "Scheduled retention runs, by result (ok, failed, skipped: another replica held the lock).",
	}, []string{"result"})}
	for _, res := range []string{retentionOK, retentionFailed, retentionSkipped} {
		r.runs.WithLabelValues(res)
	}
	reg.MustRegister(r.runs)
	return r
}

// Ran counts one scheduled run.
func (r *Retention) Ran(_ context.Context, rep retention.Report, err error) {
	switch {
	case err != nil:
		r.runs.WithLabelValues(retentionFailed).Inc()
	case rep.Skipped:
		r.runs.WithLabelValues(retentionSkipped).Inc()
	default:
		r.runs.WithLabelValues(retentionOK).Inc()
	}
}
