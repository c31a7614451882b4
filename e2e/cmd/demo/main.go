// Command demo plays handoff's story on real binaries: invoices are paid while
// logistics is down, the dispatcher retries with backoff, logistics comes back, and
// every paid invoice ends with exactly one shipment. It starts its own pair of
// services on fresh databases (handoff_demo_*) of the PostgreSQL at PG_ADMIN_URL.
package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/pgtest"
)

func main() { command.Main("demo", run) }

type services struct {
	finance, logistics *harness.Service
	financeDB          string
	logisticsDB        string
}

func run(ctx context.Context, _, _ []string, out, _ io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	say("building the binaries…")
	bin, err := harness.Build()
	if err != nil {
		return err
	}
	defer harness.RemoveBinaries()
	svc, err := start(ctx, bin)
	if err != nil {
		return err
	}
	defer func() {
		_ = svc.finance.Signal(syscall.SIGTERM)
		_ = svc.logistics.Signal(syscall.SIGTERM)
	}()
	say("finance   %s\nlogistics %s\n", svc.finance.URL, svc.logistics.URL)

	say("1. Two invoices issued and paid while logistics is up:")
	for i := range 2 {
		if err := issueAndPay(svc, fmt.Sprintf("cust-%d", i+1)); err != nil {
			return err
		}
	}
	if err := waitDelivered(ctx, svc.financeDB, 10*time.Second); err != nil {
		return err
	}
	if err := report(ctx, out, svc); err != nil {
		return err
	}

	say("\n2. Logistics goes down (SIGKILL). Three more invoices are paid; the clerk notices nothing:")
	if err := svc.logistics.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	for i := range 3 {
		if err := issueAndPay(svc, fmt.Sprintf("cust-%d", i+3)); err != nil {
			return err
		}
	}
	say("   waiting 3 s: the dispatcher retries with full-jitter backoff until the circuit opens…")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	if err := outbox(ctx, out, svc.financeDB); err != nil {
		return err
	}

	say("\n3. Logistics comes back; the circuit's probe succeeds and the backlog drains:")
	if err := svc.logistics.Run(30 * time.Second); err != nil {
		return err
	}
	start := time.Now()
	if err := waitDelivered(ctx, svc.financeDB, 60*time.Second); err != nil {
		return err
	}
	say("   every event delivered %s after logistics returned", time.Since(start).Round(10*time.Millisecond))
	if err := report(ctx, out, svc); err != nil {
		return err
	}
	return outbox(ctx, out, svc.financeDB)
}

// start makes fresh demo databases and runs both services on free ports.
func start(ctx context.Context, bin string) (*services, error) {
	admin := pgtest.AdminURL()
	if v := os.Getenv("PG_ADMIN_URL"); v != "" {
		admin = v
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	urls := map[string]string{}
	for _, name := range []string{"handoff_demo_finance", "handoff_demo_logistics"} {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return nil, err
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return nil, err
		}
		cfg := conn.Config()
		urls[name] = fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	}
	common := map[string]string{
		"API_TOKENS":     "clerk:" + harness.ClerkToken + ",ops:" + harness.OpsToken + ",warehouse:" + harness.WarehouseToken,
		"WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(harness.SecretKey),
	}
	la, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	fa, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &services{financeDB: urls["handoff_demo_finance"], logisticsDB: urls["handoff_demo_logistics"]}
	s.logistics = harness.Prepare(filepath.Join(bin, "logistics"), la, with(common, "DATABASE_URL", s.logisticsDB))
	s.finance = harness.Prepare(filepath.Join(bin, "finance"), fa, with(common,
		"DATABASE_URL", s.financeDB,
		"LOGISTICS_WEBHOOK_URL", "http://"+la+"/webhooks/finance",
		"OUTBOUND_ALLOW", "127.0.0.1/32",
		"DISPATCH_BACKOFF", "1s,2s,4s",
		"BREAKER_COOLDOWN", "3s"))
	if err := s.logistics.Run(30 * time.Second); err != nil {
		return nil, err
	}
	if err := s.finance.Run(30 * time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

// with returns a copy of m with the key/value pairs kv set.
func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func issueAndPay(svc *services, customer string) error {
	var inv struct {
		ID         string `json:"id"`
		TotalMinor int64  `json:"total_minor"`
	}
	r, err := harness.Do(http.MethodPost, svc.finance.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
		"customer_id": customer, "currency": "EUR",
		"lines": []map[string]any{{"description": "Pallet", "quantity": 2, "unit_price_minor": 6000}},
	})
	if err != nil || r.Status != http.StatusCreated {
		return fmt.Errorf("issue: %v %d %s", err, r.Status, r.Body)
	}
	if err := decode(r, &inv); err != nil {
		return err
	}
	r, err = harness.Do(http.MethodPost, svc.finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
		map[string]any{"payment_id": "pay-" + customer, "amount_minor": inv.TotalMinor})
	if err != nil || r.Status != http.StatusCreated {
		return fmt.Errorf("pay: %v %d %s", err, r.Status, r.Body)
	}
	return nil
}

func waitDelivered(ctx context.Context, financeDB string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var open int
		if err := queryRow(ctx, financeDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered'`, nil, &open); err != nil {
			return err
		}
		if open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d events still undelivered after %s", open, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
