package pager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/pgtest"
)

// A service pages through Slack: it gives the sender the SSRF guard of all its
// outgoing calls, hands the dispatcher p.DeliveryObserver() (in
// delivery.Deps.Observer), calls Notify for its own alerts, and runs the pager beside
// its other runners. Here Slack is an httptest server.
func Example() {
	db, done := pgtest.ForExample("pager", pager.Schema("orders_alerts"))
	defer done()
	posted := make(chan string, 1)
	slackAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Text string `json:"text"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &msg)
		select {
		case posted <- msg.Text:
		default:
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer slackAPI.Close()

	// Slack is a public destination: the default policy admits it. This stand-in
	// listens on loopback, which must be allowed.
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	guard := egress.New(egress.Config{Allow: allow})
	sender, err := pager.NewSlackSender(pager.SlackConfig{WebhookURL: slackAPI.URL}, guard)
	if err != nil {
		panic(err)
	}
	p, err := pager.New(db, pager.Config{Table: "orders_alerts", Service: "orders", AggregateLabel: "order",
		DashboardURL: "https://orders.example/ops/", Gather: time.Millisecond},
		pager.Deps{Log: slog.New(slog.DiscardHandler), Sender: sender})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx) }()
	p.Notify(pager.Alert{Key: "stock_sync_failed", Kind: "stock_sync_failed", Title: "stock syncs failed",
		Aggregate: "order-17", Error: "warehouse answered 503"})
	lines := strings.Split(<-posted, "\n")
	title, _, _ := strings.Cut(lines[0], " — ") // the rest counts occurrences in a window
	fmt.Println(title)
	fmt.Println(strings.Join(lines[1:], "\n"))
	cancel() // a service runs it until SIGTERM
	if err := <-stopped; err != nil {
		panic(err)
	}
	// Output:
	// *[orders]* stock syncs failed
	// e.g. order order-17, last error: warehouse answered 503
	// Dashboard: https://orders.example/ops/
}
