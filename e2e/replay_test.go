package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// A payment or refund sent again under its natural key is the fact already recorded:
// finance answers 200 with the 201's body and writes nothing, so logistics hears of
// each fact once; the same key for another invoice stays 409.
func TestPaymentAndRefundSentAgainAreTheSameFact(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	inv := issue(t, env, "cust-replay")
	other := issue(t, env, "cust-replay-other")

	paid := pay(t, env, inv, "pay-replay")
	require.Equal(t, http.StatusCreated, paid.Status, string(paid.Body))
	again := pay(t, env, inv, "pay-replay")
	require.Equal(t, http.StatusOK, again.Status, string(again.Body))
	require.JSONEq(t, string(paid.Body), string(again.Body))
	elsewhere := pay(t, env, other, "pay-replay")
	require.Equal(t, http.StatusConflict, elsewhere.Status, string(elsewhere.Body))

	refund := func(invoiceID, reason string) harness.Response {
		return harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+invoiceID+"/refunds", harness.ClerkToken,
			map[string]any{"refund_id": "ref-replay", "reason": reason})
	}
	refunded := refund(inv.ID, "damaged")
	require.Equal(t, http.StatusCreated, refunded.Status, string(refunded.Body))
	again = refund(inv.ID, "damaged in transit")
	require.Equal(t, http.StatusOK, again.Status, string(again.Body))
	require.JSONEq(t, string(refunded.Body), string(again.Body))
	require.Equal(t, http.StatusCreated, pay(t, env, other, "pay-replay-other").Status)
	elsewhere = refund(other.ID, "damaged")
	require.Equal(t, http.StatusConflict, elsewhere.Status, string(elsewhere.Body))

	waitForShipment(t, env, inv, "cancelled", 10*time.Second)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered'`) == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM payments WHERE payment_id = 'pay-replay'`))
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM refunds`))
	require.Equal(t, 3, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE aggregate_key = $1`, inv.ID))
	require.Equal(t, 3, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events WHERE invoice_id = $1`, inv.ID))
}
