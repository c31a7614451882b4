package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// outage stands in front of logistics: while down, the webhook answers 400 (so events
// are dead-lettered at once); every other request, and the webhook once up, goes on to
// logistics. finance's LOGISTICS_API_URL defaults to the same origin, so the ops API
// of logistics is reached through it too.
type outage struct {
	srv    *httptest.Server
	up     atomic.Bool
	target atomic.Pointer[httputil.ReverseProxy]
}

func newOutage(t *testing.T) *outage {
	t.Helper()
	o := &outage{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/webhooks/finance") && !o.up.Load() { // single and batch
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"type":"https://handoff.dev/problems/outage","status":400}`))
			return
		}
		proxy := o.target.Load()
		if proxy == nil {
			http.Error(w, "logistics not started yet", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *outage) proxyTo(t *testing.T, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	o.target.Store(httputil.NewSingleHostReverseProxy(u))
}

// chromiumPath finds Debian's chromium. Without one the test is skipped on a developer's
// machine, but fails in CI (CI=true), whose .ci/run installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary, and CI=true: .ci/run must install Debian's chromium")
	}
	t.Skip("no chromium binary: `apt-get install chromium` to run the dashboard browser test")
	return ""
}

// browser starts a headless Chromium for the test and returns its tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	profile := t.TempDir() // removed after the browser below has exited (cleanups run LIFO)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // Chromium refuses to sandbox as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The browser lives as long as the context of its first run: no deadline on it.
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}

// stepTimeout bounds one browser step, so a missing element fails the test, not hangs it.
const stepTimeout = 30 * time.Second

// do runs the steps in the browser within stepTimeout.
func do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// textOf reads the text of the element matching the CSS selector sel once it is visible.
func textOf(ctx context.Context, sel string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		return "", err
	}
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	return strings.TrimSpace(s), err
}

// reloadUntil reloads the page until the element matching sel reads want.
func reloadUntil(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	var last string
	require.Eventually(t, func() bool {
		if err := do(ctx, chromedp.Reload()); err != nil {
			return false
		}
		last, _ = textOf(ctx, sel)
		return last == want
	}, 60*time.Second, 250*time.Millisecond, "%s never read %q (last %q)", sel, want, last)
}

// confirmWith gives reason on an action's confirmation page and confirms it.
func confirmWith(t *testing.T, ctx context.Context, reason string) {
	t.Helper()
	require.NoError(t, do(ctx,
		chromedp.SendKeys(chromedp.CSS("#reason"), reason),
		chromedp.Click(chromedp.CSS("#confirm-button")),
		chromedp.WaitVisible(chromedp.CSS("#notice"))), "confirm with a reason")
}

// An invoice's first event is dead-lettered while logistics answers 400. Once
// logistics is back, an operator signs in to the dashboard in a real browser, clicks
// Retry on the failed event, says why, and watches it become delivered; the invoice
// trace then shows logistics' side: the shipment waiting for the warehouse.
func TestDashboardRetryDeliversADeadLetter(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	down := newOutage(t)
	env := harness.New(t, harness.Options{
		LogisticsURL: down.srv.URL + "/webhooks/finance",
		FinanceEnv:   map[string]string{"LOGISTICS_OPS_TOKEN": harness.OpsToken},
	})
	down.proxyTo(t, env.Logistics.URL)

	inv := issue(t, env, "cust-dashboard")
	r := pay(t, env, inv, "pay-dashboard")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	var failed struct {
		Items []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"items"`
	}
	require.Eventually(t, func() bool {
		r, err := harness.Do(http.MethodGet, env.Finance.URL+"/v1/ops/outbox/events?status=failed&invoice_id="+inv.ID,
			harness.OpsToken, nil)
		return err == nil && decodeInto(r, &failed) == nil && len(failed.Items) == 1
	}, 30*time.Second, 50*time.Millisecond, "the invoice.issued event is dead-lettered")
	eventID := failed.Items[0].ID
	require.Equal(t, "invoice.issued", failed.Items[0].Type)
	down.up.Store(true)

	err := do(ctx,
		chromedp.Navigate(env.Finance.URL+"/ops/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), harness.OpsToken),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#overview")),
	)
	require.NoError(t, err, "sign in")
	row := "#event-" + eventID
	got, err := textOf(ctx, row)
	require.NoError(t, err, "the failed event is listed on the overview")
	require.Contains(t, got, "HTTP 400")
	require.Contains(t, got, inv.Number, "the invoice by its number")

	require.NoError(t, do(ctx, chromedp.Click(chromedp.CSS(row+" a.retry")), chromedp.WaitVisible(chromedp.CSS("#confirm-form"))),
		"click Retry")
	confirmWith(t, ctx, "logistics accepts the customer again")
	notice, err := textOf(ctx, "#notice")
	require.NoError(t, err)
	require.Contains(t, notice, "Replayed")
	reloadUntil(t, ctx, "#event-status", "delivered")
	attempts, err := textOf(ctx, "#attempts")
	require.NoError(t, err)
	require.Contains(t, attempts, "HTTP 400", "the history of the dead letter is kept")
	require.Contains(t, attempts, "HTTP 200")

	require.NoError(t, do(ctx,
		chromedp.SendKeys(chromedp.CSS("#invoice-search"), inv.Number),
		chromedp.Submit(chromedp.CSS("#invoice-search")),
		chromedp.WaitVisible(chromedp.CSS("#trace")),
	), "search the invoice")
	reloadUntil(t, ctx, "#shipment-state", "waiting")
	trace, err := textOf(ctx, "#trace")
	require.NoError(t, err)
	require.Contains(t, trace, "Invoice "+inv.Number)
	require.Equal(t, 2, strings.Count(trace, "result applied"), "logistics applied both events")
}
