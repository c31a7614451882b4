package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/pgtest"
)

// The steps the tests of this package take against a running pair of services.

type invoice struct {
	ID         string `json:"id"`
	Number     string `json:"number"`
	Status     string `json:"status"`
	TotalMinor int64  `json:"total_minor"`
	PaidMinor  int64  `json:"paid_minor"`
}

type shipment struct {
	ID        string `json:"id"`
	InvoiceID string `json:"invoice_id"`
	State     string `json:"state"`
	Version   int64  `json:"version"`
}

func issue(t *testing.T, env *harness.Env, customer string) invoice {
	t.Helper()
	r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
		"customer_id": customer, "currency": "EUR",
		"lines": []map[string]any{{"description": "Pallet", "quantity": 2, "unit_price_minor": 6000}},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	var inv invoice
	r.JSON(t, &inv)
	require.Equal(t, "issued", inv.Status)
	require.EqualValues(t, 12000, inv.TotalMinor)
	return inv
}

func pay(t *testing.T, env *harness.Env, inv invoice, paymentID string) harness.Response {
	t.Helper()
	return harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
		map[string]any{"payment_id": paymentID, "amount_minor": inv.TotalMinor})
}

func shipmentOf(t *testing.T, env *harness.Env, invoiceID string) (shipment, bool) {
	t.Helper()
	r := harness.Call(t, http.MethodGet, env.Logistics.URL+"/v1/shipments?invoice_id="+invoiceID, harness.WarehouseToken, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var page struct {
		Items []shipment `json:"items"`
	}
	r.JSON(t, &page)
	if len(page.Items) == 0 {
		return shipment{}, false
	}
	require.Len(t, page.Items, 1, "one shipment per invoice")
	return page.Items[0], true
}

func query[T any](t *testing.T, url, sql string, args ...any) T {
	t.Helper()
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v T
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}

// waitForShipment waits up to within for the shipment of inv to reach state.
func waitForShipment(t *testing.T, env *harness.Env, inv invoice, state string, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, ok := shipmentOf(t, env, inv.ID)
		return ok && s.State == state
	}, within, 20*time.Millisecond, "shipment of %s never %s", inv.ID, state)
}

// payToWaiting issues an invoice to customer, pays it in full, waits for its shipment
// to reach waiting and returns the time from the payment's commit to the shipment's
// move, read from the two databases.
func payToWaiting(t *testing.T, env *harness.Env, customer string) time.Duration {
	t.Helper()
	inv := issue(t, env, customer)
	r := pay(t, env, inv, "pay-"+inv.ID)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	waitForShipment(t, env, inv, "waiting", 10*time.Second)
	paidAt := query[time.Time](t, env.FinanceDB, `SELECT created_at FROM payments WHERE invoice_id = $1`, inv.ID)
	waitingAt := query[time.Time](t, env.LogisticsDB, `SELECT h.at FROM shipment_history h
		JOIN shipments s ON s.id = h.shipment_id WHERE s.invoice_id = $1 AND h.to_state = 'waiting'`, inv.ID)
	return waitingAt.Sub(paidAt)
}

// issueMany issues n invoices at once, to customers prefix0 … prefix<n-1>.
func issueMany(t *testing.T, env *harness.Env, prefix string, n int) {
	t.Helper()
	concurrently(t, n, func(i int) error {
		r, err := harness.Do(http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken,
			map[string]any{"customer_id": fmt.Sprintf("%s%d", prefix, i), "currency": "EUR", "total_minor": 1000})
		if err == nil && r.Status != http.StatusCreated {
			err = fmt.Errorf("issue: %d %s", r.Status, r.Body)
		}
		return err
	})
}

// concurrently runs do(0) … do(n-1) in n goroutines released at the same instant, and
// requires every one to succeed.
func concurrently(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			errs <- do(i)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// withoutDispatch starts a pair whose finance delivers nothing: the test alone talks to
// logistics' webhook, and the outbox keeps what finance wrote.
func withoutDispatch(t *testing.T) *harness.Env {
	t.Helper()
	return harness.New(t, harness.Options{FinanceEnv: map[string]string{"DISPATCH_ENABLED": "false"}})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
