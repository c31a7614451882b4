package monitoring

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/faultproxy"
	"handoff/e2e/harness"
)

// TestMain builds the binaries in the workspace, as `make build` does: GOWORK=off,
// which this module's tests run under, is dropped before the harness calls go build.
func TestMain(m *testing.M) {
	_ = os.Unsetenv("GOWORK")
	code := m.Run()
	harness.RemoveBinaries()
	os.Exit(code)
}

// Every metric that an alert rule or a dashboard panel uses is exported by the real
// binaries once they have done some work: an invoice issued and delivered after one
// refused connection (a destination has a circuit only once it has failed), each API
// called, a path that matches no route, a reconciliation run. A histogram's _bucket,
// _sum and _count series count as its name.
func TestMonitoredMetricsAreExported(t *testing.T) {
	t.Parallel()
	wanted := append(ruleMetrics(t), dashboardMetrics(t)...)
	env := harness.New(t, harness.Options{Proxy: true, FinanceEnv: map[string]string{
		"LOGISTICS_OPS_TOKEN": harness.OpsToken, "RECONCILE_SCHEDULE": "@every 1s",
		"DISPATCH_BACKOFF": "50ms", "DISPATCH_INTERVAL": "500ms",
	}})
	work(t, env)

	var missing []use
	deadline := time.Now().Add(30 * time.Second)
	for {
		exported := mergeTypes(scrapeTypes(t, env.Finance), scrapeTypes(t, env.Logistics))
		missing = missing[:0]
		for _, u := range wanted {
			if !isExported(u.name, exported) {
				missing = append(missing, u)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the delivery and the reconciliation run on their own
	}
	if len(missing) > 0 {
		var b strings.Builder
		for _, u := range missing {
			fmt.Fprintf(&b, "\n  %s (in %s)", u.name, u.where)
		}
		t.Fatalf("metrics used by the alert rules or the dashboard that neither binary exports:%s", b.String())
	}

	// The request metrics label routes by pattern, and unknown paths as one.
	var unlabelled []string
	for svc, series := range map[*harness.Service][]string{
		env.Finance: {
			`finance_http_requests_total{method="POST",route="/v1/invoices",status="201"}`,
			`finance_http_requests_total{method="GET",route="/v1/invoices/:id",status="200"}`,
			`finance_http_requests_total{method="GET",route="/v1/ops/outbox/stats",status="200"}`,
			`finance_http_requests_total{method="GET",route="unmatched",status="404"}`,
		},
		env.Logistics: {
			`logistics_http_requests_total{method="POST",route="/webhooks/finance/batch",status="200"}`,
			`logistics_http_requests_total{method="GET",route="/v1/shipments",status="200"}`,
			`logistics_http_requests_total{method="GET",route="/v1/ops/processed-events",status="200"}`,
			`logistics_http_requests_total{method="GET",route="unmatched",status="404"}`,
		},
	} {
		body := scrape(t, svc)
		for _, s := range series {
			if !strings.Contains(body, "\n"+s+" ") {
				unlabelled = append(unlabelled, s)
			}
		}
	}
	require.Empty(t, unlabelled, "request series missing from /metrics")
}

// work issues an invoice whose first delivery finds the connection reset, waits until
// logistics has its shipment, and calls each API of both services once, and a path
// neither serves.
func work(t *testing.T, env *harness.Env) {
	t.Helper()
	env.Proxy.Set(faultproxy.Reset, 0)
	r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
		"customer_id": "cust-monitoring", "currency": "EUR",
		"lines": []map[string]any{{"description": "Pallet", "quantity": 1, "unit_price_minor": 6000}},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	var inv struct {
		ID string `json:"id"`
	}
	r.JSON(t, &inv)
	require.Eventually(t, func() bool { return strings.Contains(scrape(t, env.Finance), "finance_breaker_state{") },
		15*time.Second, 50*time.Millisecond, "the refused delivery gives logistics' destination a circuit")
	env.Proxy.Set(faultproxy.Pass, 0)
	r = harness.Call(t, http.MethodGet, env.Finance.URL+"/v1/invoices/"+inv.ID, harness.ClerkToken, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = harness.Call(t, http.MethodGet, env.Finance.URL+"/v1/ops/outbox/stats", harness.OpsToken, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		r := harness.Call(t, http.MethodGet, env.Logistics.URL+"/v1/shipments?invoice_id="+inv.ID, harness.WarehouseToken, nil)
		return r.Status == http.StatusOK && strings.Contains(string(r.Body), inv.ID)
	}, 15*time.Second, 50*time.Millisecond, "the invoice's shipment reaches logistics")
	for _, svc := range []*harness.Service{env.Finance, env.Logistics} {
		// Not harness.Call: the services' documents have no such path to hold it to.
		resp, err := http.Get(svc.URL + "/no/such/path")
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
}

// scrape returns svc's /metrics.
func scrape(t *testing.T, svc *harness.Service) string {
	t.Helper()
	resp, err := http.Get(svc.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// scrapeTypes returns the type of every metric family svc exports, from its
// `# TYPE name type` lines.
func scrapeTypes(t *testing.T, svc *harness.Service) map[string]string {
	t.Helper()
	types := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(scrape(t, svc)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	require.NoError(t, sc.Err())
	return types
}

func mergeTypes(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// isExported says whether name is a family in types, or a series of a histogram (or
// summary) family.
func isExported(name string, types map[string]string) bool {
	if _, ok := types[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		kinds := []string{"histogram"}
		if suffix != "_bucket" {
			kinds = append(kinds, "summary")
		}
		if slices.Contains(kinds, types[base]) {
			return true
		}
	}
	return false
}
