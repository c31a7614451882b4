package e2e_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// A dispatcher SIGKILLed after claiming (its request already on the wire): another
// replica delivers the event once its lease has expired, and logistics applies it once.
func TestKilledWorkersEventsAreDeliveredByAnotherAfterTheLease(t *testing.T) {
	t.Parallel()
	var hold atomic.Bool
	hold.Store(true)
	arrived := make(chan struct{}, 16)
	g := newGateway(t, func(_ http.ResponseWriter, r *http.Request, g *gateway) bool {
		if !hold.Load() {
			return false
		}
		arrived <- struct{}{}
		g.hang(r) // hold the request until its sender dies
		return true
	})

	const lease = 4 * time.Second
	env := harness.New(t, harness.Options{LogisticsURL: g.URL, FinanceEnv: map[string]string{
		"DISPATCH_LEASE": lease.String(), "DISPATCH_TIMEOUT": "2s", "DISPATCH_INTERVAL": "200ms",
	}})
	g.to(t, env)

	inv := issue(t, env, "cust-lease")
	select {
	case <-arrived: // invoice.issued is on the wire, leased to the first replica
	case <-time.After(10 * time.Second):
		t.Fatal("the first dispatcher never sent")
	}
	env.Finance.Kill(t)
	killedAt := time.Now()
	hold.Store(false)
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE lease_token IS NOT NULL`),
		"the dead worker's lease is still held")

	other := env.NewFinance(t, map[string]string{"DISPATCH_LEASE": lease.String(), "DISPATCH_TIMEOUT": "2s", "DISPATCH_INTERVAL": "200ms"})
	other.Start(t)
	waitForShipment(t, env, inv, "awaiting_payment", 20*time.Second)
	require.GreaterOrEqual(t, time.Since(killedAt), lease-time.Second, "not reclaimed before the lease ran out")
	require.Equal(t, 1, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	// logistics committed; finance settles once it has read the answer.
	require.Eventually(t, func() bool {
		return query[string](t, env.FinanceDB, `SELECT delivery_status FROM finance_outbox`) == "delivered"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts`),
		"the dead worker's request was never settled; the survivor's is the one recorded")
}
