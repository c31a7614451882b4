package reconcile_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/reconcile"
)

// The collector exports the newest report: nothing before the first run, its
// discrepancies by kind after a finished one, only the failure after a failed one.
func TestCollectorExportsTheNewestReport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := reconcile.NewCollector("finance", b.db)
	require.Zero(t, testutil.CollectAndCount(c), "no run, no series")

	b.event(t, "lost", "delivered", 2*time.Minute, false)
	b.event(t, "stuck", "pending", 20*time.Minute, false)
	_, err := lastHour(b.rec)
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP finance_reconcile_discrepancies Discrepancies found by the newest finished reconciliation, by kind (missing, unknown, overdue).
# TYPE finance_reconcile_discrepancies gauge
finance_reconcile_discrepancies{kind="missing"} 1
finance_reconcile_discrepancies{kind="overdue"} 1
finance_reconcile_discrepancies{kind="unknown"} 0
# HELP finance_reconcile_failed 1 when the newest reconciliation could not finish, else 0.
# TYPE finance_reconcile_failed gauge
finance_reconcile_failed 0
`), "finance_reconcile_discrepancies", "finance_reconcile_failed"))
	require.Equal(t, 1, testutil.CollectAndCount(c, "finance_reconcile_last_run_timestamp_seconds"))
}

func TestCollectorAfterAFailedRun(t *testing.T) {
	t.Parallel()
	db := financetest.NewDB(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	_, err := lastHour(reconcile.New(db, opsAPI(t, srv.URL), nil, reconcile.Config{}, nil))
	require.Error(t, err)
	c := reconcile.NewCollector("finance", db)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP finance_reconcile_failed 1 when the newest reconciliation could not finish, else 0.
# TYPE finance_reconcile_failed gauge
finance_reconcile_failed 1
`), "finance_reconcile_discrepancies", "finance_reconcile_failed"))
}
