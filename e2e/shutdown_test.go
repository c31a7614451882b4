package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// SIGTERM stops both services cleanly, with exit code 0, while events flow; nothing is
// left leased, and a restart delivers whatever was still pending.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{FinanceEnv: map[string]string{"DISPATCH_INTERVAL": "200ms"}})
	for i := range 5 {
		inv := issue(t, env, "cust-term")
		require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-term-"+string(rune('a'+i))).Status)
	}
	env.Finance.Stop(t)
	env.Logistics.Stop(t)
	require.Equal(t, 0, env.Finance.ExitCode(), "finance exits 0 on SIGTERM")
	require.Equal(t, 0, env.Logistics.ExitCode(), "logistics exits 0 on SIGTERM")
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE lease_token IS NOT NULL`),
		"no lease left behind")

	env.Logistics.Start(t)
	env.Finance.Start(t)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered'`) == 0
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, 5, query[int](t, env.LogisticsDB, `SELECT count(*) FROM shipments WHERE state = 'waiting'`))
}
