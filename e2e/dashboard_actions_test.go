package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// On-call fixes two incidents in a real browser, never touching the database. First
// a poison invoice.issued holds its invoice's payment back: the operator opens the
// dead letter, skips it with a reason, and the paid event is delivered and the
// shipment reaches waiting; the event page shows who skipped it and why. Then three
// invoices were dead-lettered while logistics refused them: once it takes them
// again, Retry all shows a dry run's count, changes nothing until confirmed, and then
// every one is delivered. Each step is screenshotted to e2e/.out/.
func TestDashboardSkipAndBulkRetry(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	var refusing atomic.Bool
	refusing.Store(true)
	g := newGateway(t, func(w http.ResponseWriter, r *http.Request, g *gateway) bool {
		if rejectIssued(w, r, g) {
			return true
		}
		if refusing.Load() && strings.HasPrefix(customerOf(r), "bulk-") {
			http.Error(w, `{"type":"invalid-event"}`, http.StatusUnprocessableEntity)
			return true
		}
		return false
	})
	env := harness.New(t, harness.Options{LogisticsURL: g.URL,
		FinanceEnv: map[string]string{"LOGISTICS_OPS_TOKEN": harness.OpsToken}})
	g.to(t, env)
	require.NoError(t, os.MkdirAll(screenshots, 0o755))
	shot := func(name string) {
		t.Helper()
		png, err := screenshot(ctx, 1280)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(screenshots, "dashboard-"+name+"-1280.png"), png, 0o644))
	}

	inv := issue(t, env, "skip-browser")
	require.Eventually(t, func() bool { return eventOf(t, env.Finance, inv, "invoice.issued").Status == "failed" },
		20*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-skip-browser").Status)
	head := eventOf(t, env.Finance, inv, "invoice.issued")

	require.NoError(t, do(ctx,
		chromedp.Navigate(env.Finance.URL+"/ops/events/"+head.ID),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), harness.OpsToken),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#event")),
		chromedp.Click(chromedp.CSS("#skip")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-form"))), "open the dead letter and click Skip")
	shot("confirm-skip")
	const why = "INC-77: logistics will never take this issued event"
	confirmWith(t, ctx, why)
	status, err := textOf(ctx, "#event-status")
	require.NoError(t, err)
	require.Equal(t, "skipped", status)
	actions, err := textOf(ctx, ".audit-log")
	require.NoError(t, err)
	require.Contains(t, actions, why, "the event page shows the skip")
	require.Contains(t, actions, "skip")
	shot("event-skipped")
	waitForShipment(t, env, inv, "waiting", 15*time.Second)
	require.Equal(t, "delivered", eventOf(t, env.Finance, inv, "invoice.paid").Status)

	for _, c := range []string{"bulk-1", "bulk-2", "bulk-3"} {
		b := issue(t, env, c)
		require.Eventually(t, func() bool { return eventOf(t, env.Finance, b, "invoice.issued").Status == "failed" },
			20*time.Second, 20*time.Millisecond)
	}
	refusing.Store(false)
	require.NoError(t, do(ctx,
		chromedp.Navigate(env.Finance.URL+"/ops/events?status=failed"),
		chromedp.WaitVisible(chromedp.CSS("#retry-all")),
		chromedp.Click(chromedp.CSS("#retry-all")),
		chromedp.WaitVisible(chromedp.CSS("#dry-run"))), "click Retry all")
	count, err := textOf(ctx, "#dry-run-count")
	require.NoError(t, err)
	require.Equal(t, "3", count, "the dry run counts the three dead letters")
	shot("confirm-retry-all")
	require.Equal(t, 3, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`),
		"the dry run changed nothing")
	confirmWith(t, ctx, "logistics takes bulk customers again")
	notice, err := textOf(ctx, "#notice")
	require.NoError(t, err)
	require.Contains(t, notice, "Replayed 3 events")
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`) == 0 &&
			query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'delivered'`) == 4
	}, 20*time.Second, 50*time.Millisecond, "the three are delivered")
	items := auditOf(t, env.Finance, "")
	require.Len(t, items, 2)
	require.Equal(t, "retry", items[0].Action)
	require.Equal(t, 3, items[0].Count)
	require.Equal(t, "skip", items[1].Action)

	require.NoError(t, do(ctx, chromedp.Navigate(env.Finance.URL+"/ops/audit"), chromedp.WaitVisible(chromedp.CSS("#audit"))))
	shot("audit")
}

// customerOf reads the customer id of the event r carries, leaving r's body to read.
func customerOf(r *http.Request) string {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var env struct {
		Data struct {
			CustomerID string `json:"customer_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Data.CustomerID
}
