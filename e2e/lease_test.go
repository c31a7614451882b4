package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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
	var target atomic.Pointer[url.URL]
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			_, _ = io.Copy(io.Discard, r.Body)
			arrived <- struct{}{}
			<-r.Context().Done() // hold the request until its sender dies
			return
		}
		httputil.NewSingleHostReverseProxy(target.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)

	const lease = 4 * time.Second
	env := harness.New(t, harness.Options{LogisticsURL: gate.URL + "/webhooks/finance", FinanceEnv: map[string]string{
		"DISPATCH_LEASE": lease.String(), "DISPATCH_TIMEOUT": "2s", "DISPATCH_INTERVAL": "200ms",
	}})
	u, err := url.Parse(env.Logistics.URL)
	require.NoError(t, err)
	target.Store(u)

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
	require.Eventually(t, func() bool {
		s, ok := shipmentOf(t, env, inv.ID)
		return ok && s.State == "awaiting_payment"
	}, 20*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(killedAt), lease-time.Second, "not reclaimed before the lease ran out")
	require.Equal(t, 1, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	// logistics committed; finance settles once it has read the answer.
	require.Eventually(t, func() bool {
		return query[string](t, env.FinanceDB, `SELECT delivery_status FROM finance_outbox`) == "delivered"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts`),
		"the dead worker's request was never settled; the survivor's is the one recorded")
}
