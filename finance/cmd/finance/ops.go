package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/finance/internal/insight"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/opsapi"
	"handoff/finance/internal/opsweb"
	"handoff/finance/internal/reconcile"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/egress"
)

// newOps builds the operations service that the ops API, the dashboard and the outbox
// commands share, and the function that releases its logistics client, which calls
// through guard.
func newOps(db *bun.DB, cfg config, guard *egress.Dialer, log *slog.Logger) (*ops.Service, func(), error) {
	store, br, err := deliveryTables(cfg)
	if err != nil {
		return nil, nil, err
	}
	invoices, err := invoice.NewService(db, invoice.Config{Destination: cfg.WebhookURL})
	if err != nil {
		return nil, nil, fmt.Errorf("invalid LOGISTICS_WEBHOOK_URL: %w", err)
	}
	client, err := logisticsclient.New(logisticsclient.Config{
		BaseURL: cfg.Oncall.Reconcile.LogisticsURL, Token: cfg.Oncall.Reconcile.OpsToken, Guard: guard,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("invalid LOGISTICS_API_URL: %w", err)
	}
	svc, err := ops.New(ops.Config{
		DB: db, Outbox: store, Invoices: invoices, Circuits: br, Destination: cfg.WebhookURL, Logistics: client,
		Reconciliations: latestReconciliation{db: db}, Log: log,
	})
	if err != nil {
		return nil, nil, err
	}
	return svc, client.Close, nil
}

// registerOps mounts the ops API (/v1/ops) and the dashboard (/ops/), whose sign-ins
// live in db.
func registerOps(e *echo.Echo, db *bun.DB, svc *ops.Service, cfg config, log *slog.Logger) error {
	opsapi.Register(e.Group(""), svc, cfg.Tokens)
	signIns, err := signin.New(db, signin.Config{})
	if err != nil {
		return err
	}
	ins, err := insight.New(db)
	if err != nil {
		return err
	}
	dash, err := opsweb.New(opsweb.Config{Service: svc, Insight: ins, PendingAge: cfg.Oncall.PendingAge,
		Tokens: cfg.Tokens, SignIns: signIns, URL: cfg.Oncall.DashboardURL, Log: log})
	if err != nil {
		return err
	}
	dash.Register(e)
	return nil
}

// latestReconciliation shows the reconciliation job's newest stored report.
type latestReconciliation struct {
	db *bun.DB
}

func (l latestReconciliation) Latest(ctx context.Context) (ops.Reconciliation, bool, error) {
	r, ok, err := reconcile.Latest(ctx, l.db)
	if err != nil || !ok {
		return ops.Reconciliation{}, ok, err
	}
	return reconciliationOf(r), true, nil
}

// reconciliationOf is a report as the ops service shows the latest one: the keys of
// its discrepancies.
func reconciliationOf(r reconcile.Report) ops.Reconciliation {
	return ops.Reconciliation{
		FinishedAt: r.FinishedAt, From: r.From, To: r.To, Delivered: r.Delivered, Processed: r.Processed, Skipped: r.Skipped,
		MissingCount: r.MissingCount, UnknownCount: r.UnknownCount, OverdueCount: r.OverdueCount,
		Missing: keys(r.Missing), Unknown: keys(r.Unknown), Overdue: keys(r.Overdue), Error: r.Error,
	}
}

func keys(ds []reconcile.Discrepancy) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.IdempotencyKey
	}
	return out
}
