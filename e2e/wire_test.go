package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/problem"
)

// What finance accepts, logistics accepts: identifiers logistics would refuse are
// refused by finance with a 400 naming the field, and the longest identifiers finance
// accepts move the shipment to waiting and cancelled. Never 201 and then a dead letter.
func TestIdentifiersFinanceAcceptsReachLogistics(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	invoices := env.Finance.URL + "/v1/invoices"
	refund := func(inv invoice, refundID string) harness.Response {
		return harness.Call(t, http.MethodPost, invoices+"/"+inv.ID+"/refunds", harness.ClerkToken,
			map[string]any{"refund_id": refundID, "reason": "damaged"})
	}
	requireRefused := func(r harness.Response, field string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		var p problem.Problem
		r.JSON(t, &p)
		require.Len(t, p.Errors, 1, string(r.Body))
		require.Equal(t, field, p.Errors[0].Field)
	}

	inv := issue(t, env, "cust-wire")
	requireRefused(pay(t, env, inv, "Zahlung-Müller"), "payment_id")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-wire").Status)
	requireRefused(refund(inv, "réf-1"), "refund_id")
	requireRefused(harness.Call(t, http.MethodPost, invoices, harness.ClerkToken, map[string]any{
		"customer_id": strings.Repeat("顧", 100), "currency": "EUR", "total_minor": 100}), "customer_id")

	longest := issue(t, env, strings.Repeat("顧", 85)) // 255 bytes
	require.Equal(t, http.StatusCreated, pay(t, env, longest, strings.Repeat("P", 128)).Status)
	waitForShipment(t, env, longest, "waiting", 10*time.Second)
	require.Equal(t, http.StatusCreated, refund(longest, strings.Repeat("R", 128)).Status)
	waitForShipment(t, env, longest, "cancelled", 10*time.Second)

	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered'`) == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM refunds WHERE invoice_id = $1`, inv.ID))
	require.Equal(t, 2, query[int](t, env.FinanceDB, `SELECT count(*) FROM invoices`))
}
