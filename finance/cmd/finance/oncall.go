package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"handoff/finance/internal/insight"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/reconcile"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/metrics"
	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/schedule"
)

// alertTable is finance's alert table (pager.Schema).
const alertTable = "finance_alerts"

// runner is the lifecycle contract of every background job: Run returns when ctx ends.
type runner interface {
	Run(ctx context.Context) error
}

// runnerFunc adapts a function to runner.
type runnerFunc func(ctx context.Context) error

// Run calls f.
func (f runnerFunc) Run(ctx context.Context) error { return f(ctx) }

// oncall is what finance runs for its operators beside the API and the dispatcher:
// the pager, the metrics, retention, reconciliation and the dashboard's chart rollup.
type oncall struct {
	// Observer hears the dispatcher: the pager and the delivery metrics.
	Observer delivery.Observer
	// Metrics is the registry served on /metrics.
	Metrics *prometheus.Registry
	Runners []runner
}

// newOncall builds the pager, the metrics and the scheduled jobs of finance; their
// calls to Slack and logistics go through guard.
func newOncall(db *bun.DB, cfg config, guard *egress.Dialer, log *slog.Logger) (*oncall, error) {
	store, br, err := deliveryTables(cfg)
	if err != nil {
		return nil, err
	}
	pg, err := newPager(db, cfg.Oncall, guard, log, pager.DeliveryDebts(store, br))
	if err != nil {
		return nil, err
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewOutboxCollector("finance", db, store, br), reconcile.NewCollector("finance", db))
	o := &oncall{
		Observer: delivery.Observers{pg.DeliveryObserver(), metrics.NewDelivery(reg, "finance")},
		Metrics:  reg,
		Runners:  []runner{pg},
	}
	pending, err := schedule.New("@every "+pendingCheckEvery(cfg.Oncall.PendingAge).String(), func(ctx context.Context) {
		if err := pg.CheckPending(ctx, db, store, cfg.Oncall.PendingAge); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "pending-age check failed", "err", err)
		}
	}, log)
	if err != nil {
		return nil, err
	}
	ret, err := newRetention(db, cfg.Oncall.Retention, metrics.NewRetention(reg, "finance"), log)
	if err != nil {
		return nil, err
	}
	roll, err := newChartRollup(db, log)
	if err != nil {
		return nil, err
	}
	o.Runners = append(o.Runners, pending, ret, roll)
	if cfg.Oncall.Reconcile.OpsToken == "" {
		log.Warn("LOGISTICS_OPS_TOKEN is not set: scheduled reconciliation with logistics is off")
		return o, nil
	}
	rec, closeClient, err := newReconciler(db, cfg.Oncall.Reconcile, guard, pg, log, nil)
	if err != nil {
		return nil, err
	}
	scheduled, err := schedule.New(cfg.Oncall.Reconcile.Schedule, rec.Scheduled, log)
	if err != nil {
		closeClient()
		return nil, err
	}
	o.Runners = append(o.Runners, runnerFunc(func(ctx context.Context) error {
		defer closeClient()
		return scheduled.Run(ctx)
	}))
	return o, nil
}

// newPager returns the pager writing to Slack through guard as configured, or only to
// the log, and taking the pages that debtors owe.
func newPager(db *bun.DB, c oncallConfig, guard *egress.Dialer, log *slog.Logger, debtors ...pager.Debtor) (*pager.Pager, error) {
	sender, err := pager.NewSlackSender(c.Slack, guard)
	if err != nil {
		return nil, err
	}
	if sender == nil {
		log.Info("no SLACK_WEBHOOK_URL or SLACK_TOKEN: alerts are only logged")
	}
	return pager.New(db, pager.Config{
		Table: alertTable, Service: "finance", AggregateLabel: "invoice",
		DashboardURL: c.DashboardURL, Links: pageLinks, Runbooks: runbooks,
		Gather: c.AlertGather, Repeat: c.AlertRepeat,
	}, pager.Deps{Log: log, Sender: sender, Debtors: debtors})
}

// newReconciler returns the reconciler of finance against logistics' ops API, called
// through guard, and the function that releases its client; notifier may be nil (the
// CLI prints instead of paging), and so may progress, which hears each page read from
// logistics (the CLI shows it).
func newReconciler(db *bun.DB, c reconcileConfig, guard *egress.Dialer, notifier reconcile.Notifier, log *slog.Logger,
	progress func(read int)) (*reconcile.Reconciler, func(), error) {
	client, err := logisticsclient.New(logisticsclient.Config{BaseURL: c.LogisticsURL, Token: c.OpsToken,
		Timeout: 30 * time.Second, Guard: guard})
	if err != nil {
		return nil, nil, fmt.Errorf("invalid LOGISTICS_API_URL: %w", err)
	}
	rec := reconcile.New(db, reconcile.OpsAPI{Client: client, Progress: progress}, notifier,
		reconcile.Config{Overdue: c.Overdue, Window: c.Window}, log)
	return rec, client.Close, nil
}

// pendingCheckEvery checks often enough to page within a quarter of the threshold,
// and at most twice a minute.
func pendingCheckEvery(threshold time.Duration) time.Duration {
	return min(max(threshold/4, time.Second), 30*time.Second).Truncate(time.Second)
}

// newChartRollup keeps the dashboard's per-minute rollup current (insight.Store.Roll).
func newChartRollup(db *bun.DB, log *slog.Logger) (runner, error) {
	store, err := insight.New(db)
	if err != nil {
		return nil, err
	}
	roll := func(ctx context.Context) {
		if err := store.Roll(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "chart rollup failed", "err", err)
		}
	}
	sched, err := schedule.New(insight.RollEvery, roll, log)
	if err != nil {
		return nil, err
	}
	// Roll once at start, so the charts hold the last day before the first tick.
	return runnerFunc(func(ctx context.Context) error {
		roll(ctx)
		return sched.Run(ctx)
	}), nil
}
