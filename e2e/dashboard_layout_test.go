package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// screenshots is where the layout test writes what it saw (git-ignored).
const screenshots = ".out"

// Every dashboard page, at desktop (1280 px) and phone (390 px) width, in a real
// browser: each is screenshotted to e2e/.out/ for a person to look at, and none
// scrolls sideways on a phone. The pages hold what on-call meets in an incident: a
// dead letter, a later event of its invoice waiting behind it, deliveries in the
// charts, an alert.
func TestDashboardPagesFitDesktopAndPhone(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	g := newGateway(t, rejectCustomers("bad-"))
	env := harness.New(t, harness.Options{LogisticsURL: g.URL,
		FinanceEnv: map[string]string{"LOGISTICS_OPS_TOKEN": harness.OpsToken, "ALERT_GATHER": "100ms"}})
	g.to(t, env)

	for i := range 6 {
		inv := issue(t, env, fmt.Sprintf("cust-layout-%d", i))
		require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-"+inv.ID).Status)
	}
	bad := issue(t, env, "bad-layout")
	require.Equal(t, http.StatusCreated, pay(t, env, bad, "pay-bad").Status)
	var head, waiting string
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'delivered'`) == 12 &&
			query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`) == 1
	}, 30*time.Second, 50*time.Millisecond)
	head = query[string](t, env.FinanceDB, `SELECT id::text FROM finance_outbox WHERE delivery_status = 'failed'`)
	waiting = query[string](t, env.FinanceDB, `SELECT id::text FROM finance_outbox WHERE delivery_status = 'pending'`)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT coalesce(sum(delivered), 0) FROM finance_outbox_minutes`) == 12 &&
			query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_alerts`) > 0
	}, 45*time.Second, 250*time.Millisecond, "the rollup (every 15 s) counts the deliveries; the dead letter is paged")

	require.NoError(t, os.MkdirAll(screenshots, 0o755))
	base := env.Finance.URL + "/ops"
	pages := []struct{ name, path, ready string }{
		{"login", "/login", "#login"},
		{"overview", "/", "#trends"},
		{"overview-24h", "/?range=24h", "#trends"},
		{"events", "/events", "#events"},
		{"failed", "/events?status=failed", "#events"},
		{"event-failed", "/events/" + head, "#event"},
		{"event-waiting", "/events/" + waiting, "#waiting-for"},
		{"trace", "/invoices/" + bad.Number, "#trace"},
		{"confirm-skip", "/events/" + head + "/skip", "#confirm-form"},
		{"confirm-retry-all", "/bulk/retry?status=failed", "#dry-run"},
		{"audit", "/audit", "#audit"},
		{"not-found", "/events/00000000-0000-0000-0000-000000000000", "#error"},
	}
	signedIn := false
	for _, width := range []int64{1280, 390} {
		require.NoError(t, do(ctx, chromedp.EmulateViewport(width, 900)), "viewport %d", width)
		for _, p := range pages {
			require.NoError(t, do(ctx, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready))),
				"%s at %d px", p.name, width)
			png, err := screenshot(ctx, width)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(screenshots, fmt.Sprintf("dashboard-%s-%d.png", p.name, width)), png, 0o644))
			// innerWidth counts the vertical scrollbar; clientWidth, stricter, does not.
			fits, err := run(ctx, chromedp.Evaluate[string](`(() => { const d = document.documentElement;
				return d.scrollWidth + " " + window.innerWidth + " " + d.clientWidth; })()`))
			require.NoError(t, err)
			var scroll, inner, client int
			_, err = fmt.Sscan(fits, &scroll, &inner, &client)
			require.NoError(t, err)
			if width == 390 {
				require.LessOrEqual(t, scroll, inner, "%s scrolls sideways at %d px", p.name, width)
				require.LessOrEqual(t, scroll, client, "%s hides content under the scrollbar at %d px", p.name, width)
			}
			if !signedIn {
				require.NoError(t, do(ctx,
					chromedp.SendKeys(chromedp.CSS("#token"), harness.OpsToken),
					chromedp.Submit(chromedp.CSS("#login")),
					chromedp.WaitVisible(chromedp.CSS("#overview"))), "sign in")
				signedIn = true
			}
		}
	}
	require.NoError(t, do(ctx, chromedp.Navigate(base+"/events/"+waiting)))
	text, err := textOf(ctx, "#waiting-for")
	require.NoError(t, err)
	require.Contains(t, text, "waiting for invoice.issued #1 (failed)")
}

// run runs one browser action that yields a value, within stepTimeout.
func run[T any](ctx context.Context, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// screenshot captures the whole page at width: the viewport is stretched to the
// page's height first, so the picture is exactly what the layout holds (a full-size
// capture of a narrow window leaves out a scrollbar's width on the right).
func screenshot(ctx context.Context, width int64) ([]byte, error) {
	height, err := run(ctx, chromedp.Evaluate[int64](`document.documentElement.scrollHeight`))
	if err != nil {
		return nil, err
	}
	if err := do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		return nil, err
	}
	png, err := run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, err
	}
	return png, do(ctx, chromedp.EmulateViewport(width, 900))
}
