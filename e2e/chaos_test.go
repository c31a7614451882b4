package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/e2e/faultproxy"
	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/pgtest"
)

// chaosConfig makes the dispatcher retry fast and never give up during a chaos run.
var chaosConfig = map[string]string{
	"DISPATCH_INTERVAL":     "500ms",
	"DISPATCH_TIMEOUT":      "2s",
	"DISPATCH_LEASE":        "4s",
	"DISPATCH_BACKOFF":      "50ms,100ms,250ms,500ms",
	"DISPATCH_MAX_ATTEMPTS": "1000",
	"BREAKER_THRESHOLD":     "5",
	"BREAKER_COOLDOWN":      "500ms",
	"LOG_LEVEL":             "info",
}

// scenario injects one kind of fault again and again until stop is closed, and
// returns how many faults it injected.
type scenario struct {
	name  string
	proxy bool
	// slow puts a slowReceiver between finance and logistics (the inject's slow).
	slow bool
	// batch runs the dispatcher with DISPATCH_MODE=batch; the others run it in single
	// mode, one request per event.
	batch bool
	// config overrides chaosConfig.
	config map[string]string
	inject func(t *testing.T, env *harness.Env, slow *slowReceiver, stop <-chan struct{}) (int, error)
	// api picks the finance process the clerks talk to (a second replica, say).
	api func(t *testing.T, env *harness.Env) *harness.Service
	// check proves what the scenario adds to the common invariants.
	check func(t *testing.T, env *harness.Env, slow *slowReceiver)
}

// streamDuration is how long the payment stream (and so the faults) lasts.
func streamDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

func chaosSize() (invoices, runs int) {
	invoices, runs = 40, 1
	if v, err := strconv.Atoi(os.Getenv("CHAOS_INVOICES")); err == nil && v > 0 {
		invoices = v
	}
	if v, err := strconv.Atoi(os.Getenv("CHAOS_RUNS")); err == nil && v > 0 {
		runs = v
	}
	return invoices, runs
}

// every runs fault every period until stop; a fault that fails ends the loop.
func every(period time.Duration, stop <-chan struct{}, fault func() error) (int, error) {
	n := 0
	for {
		select {
		case <-stop:
			return n, nil
		case <-time.After(period):
		}
		if err := fault(); err != nil {
			return n, err
		}
		n++
	}
}

func restart(s *harness.Service) error {
	if err := s.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	return s.Run(harness.ReadyWithin)
}

// inBatchMode repeats a scenario with the dispatcher in batch mode.
func inBatchMode(sc scenario) scenario {
	sc.name += " (batch)"
	sc.batch = true
	return sc
}

var scenarios = append(baseScenarios, inBatchMode(baseScenarios[0]), inBatchMode(baseScenarios[5]))

var baseScenarios = []scenario{
	{name: "logistics SIGKILL every 300ms", inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		return every(300*time.Millisecond, stop, func() error { return restart(env.Logistics) })
	}},
	{name: "finance SIGKILL mid-batch", inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		return every(700*time.Millisecond, stop, func() error { return restart(env.Finance) })
	}},
	{name: "two finance replicas, one killed", api: func(t *testing.T, env *harness.Env) *harness.Service {
		b := env.NewFinance(t, nil)
		b.Start(t)
		return b
	}, inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		return every(500*time.Millisecond, stop, func() error { return restart(env.Finance) })
	}},
	{name: "pg_terminate_backend on both", inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		return every(250*time.Millisecond, stop, func() error { return terminateBackends(env) })
	}},
	{name: "proxy faults then healed", proxy: true, inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		faults := []struct {
			f     faultproxy.Fault
			delay time.Duration
		}{{faultproxy.Latency, 200 * time.Millisecond}, {faultproxy.Reset, 0}, {faultproxy.BlackHole, 0},
			{faultproxy.CutResponse, 0}, {faultproxy.SlowBody, 20 * time.Millisecond}}
		i := 0
		n, err := every(700*time.Millisecond, stop, func() error {
			f := faults[i%len(faults)]
			env.Proxy.Set(f.f, f.delay)
			i++
			return nil
		})
		env.Proxy.Set(faultproxy.Pass, 0)
		return n, err
	}},
	{name: "responses lost after apply", proxy: true, inject: func(t *testing.T, env *harness.Env, _ *slowReceiver, stop <-chan struct{}) (int, error) {
		drop := false
		n, err := every(400*time.Millisecond, stop, func() error {
			drop = !drop
			if drop {
				env.Proxy.Set(faultproxy.DropResponse, 0)
			} else {
				env.Proxy.Set(faultproxy.Pass, 0)
			}
			return nil
		})
		env.Proxy.Set(faultproxy.Pass, 0)
		return n, err
	}},
	{name: "receiver hangs past the settle window", slow: true, config: defaultPatience, check: checkHangs,
		inject: func(t *testing.T, _ *harness.Env, slow *slowReceiver, stop <-chan struct{}) (int, error) {
			return holdNowAndThen(slow, time.Minute, stop) // longer than the dispatcher waits
		}},
	{name: "receiver answers 2xx slowly", slow: true, config: defaultPatience, check: checkSlowAnswers,
		inject: func(t *testing.T, _ *harness.Env, slow *slowReceiver, stop <-chan struct{}) (int, error) {
			return holdNowAndThen(slow, slowAnswer, stop)
		}},
}

func terminateBackends(env *harness.Env) error {
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, env.FinanceDB)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname IN (current_database(), $1) AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
		dbName(env.LogisticsDB))
	return err
}

func dbName(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return ""
	}
	return cfg.Database
}

// TestChaos drives a stream of payments through each fault and then proves, in both
// databases, that nothing was lost and nothing doubled. `make test` runs a short
// version; `make chaos` runs 300 invoices per scenario, 5 runs in a row.
func TestChaos(t *testing.T) {
	t.Parallel()
	invoices, runs := chaosSize()
	var mu sync.Mutex
	var table []string
	t.Cleanup(func() {
		t.Logf("\n%-42s %4s %7s %7s %10s %5s\n%s", "scenario", "run", "events", "faults", "duplicates", "lost",
			strings.Join(table, "\n"))
	})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			// Each run is a subtest of its own, so its services, proxy and pools are
			// gone before the next run starts: five runs' worth would exhaust
			// PostgreSQL's connections.
			for run := 1; run <= runs; run++ {
				ok := t.Run(fmt.Sprintf("run_%d", run), func(t *testing.T) {
					row := runScenario(t, sc, invoices)
					mu.Lock()
					table = append(table, fmt.Sprintf("%-42s %4d %7d %7d %10d %5d", sc.name, run, row.events, row.faults, row.duplicates, row.lost))
					mu.Unlock()
				})
				if !ok {
					return
				}
			}
		})
	}
}

type chaosRow struct{ events, faults, duplicates, lost int }

func runScenario(t *testing.T, sc scenario, invoices int) chaosRow {
	cfg := maps.Clone(chaosConfig)
	maps.Copy(cfg, sc.config)
	cfg["DISPATCH_MODE"] = "single"
	if sc.batch {
		cfg["DISPATCH_MODE"] = "batch"
	}
	opts := harness.Options{Proxy: sc.proxy, FinanceEnv: cfg}
	var slow *slowReceiver
	if sc.slow {
		slow = newSlowReceiver(t)
		opts.LogisticsURL = slow.URL
	}
	env := harness.New(t, opts)
	if slow != nil {
		slow.to(t, env)
	}
	api := env.Finance
	if sc.api != nil {
		api = sc.api(t, env)
	}
	stop := make(chan struct{})
	var faults int
	var injectErr error
	var wg sync.WaitGroup
	wg.Go(func() { faults, injectErr = sc.inject(t, env, slow, stop) })
	paid := payStream(t, api, invoices, streamDuration())
	close(stop)
	wg.Wait()
	require.NoError(t, injectErr)

	// Heal: both services up, then wait for the outbox to drain.
	ensureUp(t, env.Logistics)
	ensureUp(t, env.Finance)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered' OR lease_token IS NOT NULL`) == 0
	}, 120*time.Second, 50*time.Millisecond, "outbox drained after healing")
	row := checkInvariants(t, env, paid, faults)
	if sc.check != nil {
		sc.check(t, env, slow)
	}
	return row
}

// ensureUp starts s if its process is gone, and waits for it to be ready: a live
// process may answer /readyz with 503 for a moment after its connections were
// terminated, and a second copy of it would find its port taken.
func ensureUp(t *testing.T, s *harness.Service) {
	t.Helper()
	if !s.Running() {
		require.NoError(t, s.Run(harness.ReadyWithin))
		return
	}
	require.Eventually(t, func() bool { return ready(s) }, 60*time.Second, 50*time.Millisecond, "ready again")
}

func ready(s *harness.Service) bool {
	r, err := harness.Do(http.MethodGet, s.URL+"/readyz", "", nil)
	return err == nil && r.Status == http.StatusOK
}

// payStream issues and pays n invoices through api with 4 concurrent clerks, paced to
// take about d. A clerk whose request fails (the service is down, a connection
// dropped) retries until it knows the outcome: an invoice is only counted once
// finance said it is paid.
func payStream(t *testing.T, api *harness.Service, n int, d time.Duration) []string {
	t.Helper()
	jobs := make(chan int)
	var mu sync.Mutex
	var paid []string
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range jobs {
				id, err := payOne(api, i)
				if err != nil {
					failed.Store(err)
					continue
				}
				mu.Lock()
				paid = append(paid, id)
				mu.Unlock()
			}
		})
	}
	pace := time.NewTicker(d / time.Duration(n))
	for i := range n {
		<-pace.C
		jobs <- i
	}
	pace.Stop()
	close(jobs)
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		t.Fatal(err)
	}
	return paid
}

func payOne(api *harness.Service, i int) (string, error) {
	var inv struct {
		ID         string `json:"id"`
		TotalMinor int64  `json:"total_minor"`
	}
	r, err := retry(func() (harness.Response, error) {
		return harness.Do(http.MethodPost, api.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
			"customer_id": fmt.Sprintf("cust-%d", i), "currency": "EUR", "total_minor": 1000 + i})
	}, http.StatusCreated)
	if err != nil {
		return "", err
	}
	if err := decodeInto(r, &inv); err != nil {
		return "", err
	}
	paymentID := fmt.Sprintf("pay-%d", i)
	// A retry after a lost answer finds the payment recorded: 200, nothing written.
	_, err = retry(func() (harness.Response, error) {
		return harness.Do(http.MethodPost, api.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
			map[string]any{"payment_id": paymentID, "amount_minor": inv.TotalMinor})
	}, http.StatusCreated, http.StatusOK)
	if err != nil {
		return "", err
	}
	return inv.ID, nil
}

// retry repeats call until it answers one of want, for up to a minute; transport
// errors and 5xx (a service restarting, a connection terminated) are retried.
func retry(call func() (harness.Response, error), want ...int) (harness.Response, error) {
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		r, err := call()
		if err == nil {
			for _, w := range want {
				if r.Status == w {
					return r, nil
				}
			}
			if r.Status < 500 {
				return r, fmt.Errorf("unexpected answer %d %s", r.Status, r.Body)
			}
			last = fmt.Sprintf("%d %s", r.Status, r.Body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return harness.Response{}, fmt.Errorf("no answer in a minute; last: %s", last)
}

func decodeInto(r harness.Response, v any) error {
	return jsonUnmarshal(r.Body, v)
}

// checkInvariants proves the promise in both databases: every paid invoice has
// exactly one shipment in waiting (or later), one processed event per outbox key and
// no other, no outbox row undelivered, failed or leased, and every request counted
// with its attempt row, none after a 2xx.
func checkInvariants(t *testing.T, env *harness.Env, paid []string, faults int) chaosRow {
	t.Helper()
	outboxKeys := keys(t, env.FinanceDB, `SELECT idempotency_key FROM finance_outbox`)
	processed := keys(t, env.LogisticsDB, `SELECT idempotency_key FROM logistics_processed_events`)
	lost := 0
	for k := range outboxKeys {
		if !processed[k] {
			lost++
			t.Errorf("key %s delivered by finance but never processed by logistics", k)
		}
	}
	for k := range processed {
		require.True(t, outboxKeys[k], "logistics processed %s, which finance never wrote", k)
	}
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox
		WHERE delivery_status <> 'delivered' OR lease_token IS NOT NULL`), "no outbox row undelivered, failed or leased")
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox o
		WHERE o.request_count <> (SELECT count(*) FROM finance_outbox_attempts a WHERE a.outbox_id = o.id)`),
		"every request counted has its attempt row, and no other")
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts a
		JOIN finance_outbox o ON o.id = a.outbox_id WHERE a.status_code BETWEEN 200 AND 299 AND a.attempt_no <> o.request_count`),
		"no request follows a settled 2xx")
	paidInFinance := query[int](t, env.FinanceDB, `SELECT count(*) FROM invoices WHERE status = 'paid'`)
	require.Equal(t, len(paid), paidInFinance, "every payment the clerks saw is in finance, and no other")
	require.Equal(t, paidInFinance, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE event_type = 'invoice.paid'`))
	for _, id := range paid {
		require.Equal(t, 1, query[int](t, env.LogisticsDB, `SELECT count(*) FROM shipments WHERE invoice_id = $1 AND state = 'waiting'`, id),
			"invoice %s has exactly one shipment in waiting", id)
	}
	require.Equal(t, len(paid), query[int](t, env.LogisticsDB, `SELECT count(*) FROM shipments WHERE state = 'waiting'`))
	require.Equal(t, len(paid), query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events WHERE event_type = 'invoice.paid'`))
	return chaosRow{events: len(outboxKeys), faults: faults, lost: lost,
		duplicates: strings.Count(env.Logistics.Log(), `"duplicate":true`)}
}

func keys(t *testing.T, url, sql string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql)
	require.NoError(t, err)
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := make(map[string]bool, len(list))
	for _, k := range list {
		require.False(t, out[k], "key %s stored twice", k)
		out[k] = true
	}
	return out
}
