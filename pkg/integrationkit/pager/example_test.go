package pager_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/pager"
)

// A service pages through Slack: it gives the sender the SSRF guard of all its
// outgoing calls, hands the dispatcher p.DeliveryObserver() (in
// delivery.Deps.Observer), calls Notify for its own alerts, and runs the pager beside
// its other runners.
func Example() {
	var db *bun.DB // the service's database, with the alert table
	// Slack is a public destination: the default policy admits it, nothing to allow.
	guard := egress.New(egress.Config{})
	sender, err := pager.NewSlackSender(pager.SlackConfig{WebhookURL: os.Getenv("SLACK_WEBHOOK_URL")}, guard)
	if err != nil {
		panic(err)
	}
	p, err := pager.New(db, pager.Config{Table: "orders_alerts", Service: "orders", AggregateLabel: "order",
		DashboardURL: "https://orders.example/ops/"}, pager.Deps{Log: slog.Default(), Sender: sender})
	if err != nil {
		panic(err)
	}
	p.Notify(pager.Alert{Key: "stock_sync_failed", Kind: "stock_sync_failed", Title: "stock syncs failed",
		Aggregate: "order-17", Error: "warehouse answered 503"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a service runs it until SIGTERM
	_ = p.Run(ctx)
}
