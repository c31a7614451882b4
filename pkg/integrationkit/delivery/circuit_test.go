package delivery_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// With the receiver failing, 4 replicas and 500 pending events: once the circuit is
// open no request is sent during the cool-down, each half-open lets exactly one
// request through in the whole cluster, and deferred events keep their attempts.
func TestOpenCircuitSendsNothingAndProbesOnce(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	var mu sync.Mutex
	var arrivals []time.Time
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	b.enqueueEach(t, b.url, keys("k", 500))
	const cooldown = 2500 * time.Millisecond
	br := b.newBreaker(t, breaker.Config{Threshold: 5, Cooldown: cooldown, ProbeLease: 5 * time.Second})
	// Four replicas: each holds one of the test pool's connections for LISTEN.
	stop := b.replicas(t, 4, delivery.Config{Concurrency: 4, Batch: 10, Interval: 100 * time.Millisecond,
		Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 1000}, delivery.Deps{Breaker: br})

	type circuit struct {
		State     breaker.State `bun:"state"`
		OpenUntil time.Time     `bun:"open_until"`
		ChangedAt time.Time     `bun:"changed_at"`
	}
	read := func() (c circuit) {
		_ = b.db.NewRaw(`SELECT state, coalesce(open_until, now()) AS open_until, changed_at FROM kit_breakers`).Scan(context.Background(), &c)
		return c
	}
	// Each transition is reported once its statement committed: the row read just
	// after it is the window it opened, which lasts a cool-down.
	b.observed.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
	first := read()
	require.Equal(t, breaker.Open, first.State)
	// Two more cool-downs: each must see exactly one probe.
	var windows []circuit
	for prev, k := first, 1; k <= 2; k++ {
		b.observed.wait(t, 10*time.Second, fmt.Sprintf("reopening %d", k), func(h *history) bool { return h.changes(breaker.Reopened) >= k })
		c := read()
		require.Equal(t, breaker.Open, c.State)
		require.True(t, c.OpenUntil.After(prev.OpenUntil), "a new cool-down")
		windows, prev = append(windows, c), c
	}
	require.NoError(t, stop())

	mu.Lock()
	defer mu.Unlock()
	// Circuit k opened at opened[k] and refused until until[k]. Requests whose permit
	// was granted before it opened may land just after (grace: generous, as a loaded
	// CI machine can hold a goroutine between permit and send); after that nothing may arrive
	// until until[k], and between until[k] and the next opening exactly one: the probe.
	const grace = time.Second
	opened := []time.Time{first.ChangedAt, windows[0].ChangedAt, windows[1].ChangedAt}
	until := []time.Time{first.OpenUntil, windows[0].OpenUntil, windows[1].OpenUntil}
	count := func(from, to time.Time) int {
		n := 0
		for _, at := range arrivals {
			if !at.Before(from) && at.Before(to) {
				n++
			}
		}
		return n
	}
	for k := range 3 {
		require.Zero(t, count(opened[k].Add(grace), until[k]), "no request during cool-down %d (arrivals %v)", k, offsets(arrivals, opened[0]))
	}
	for k := range 2 {
		require.Equal(t, 1, count(until[k], opened[k+1].Add(grace)), "one probe across 4 replicas after cool-down %d (arrivals %v)", k, offsets(arrivals, opened[0]))
	}

	require.Zero(t, b.count(t, `request_count = 0 AND delivery_attempts > 0`), "deferred events spend no attempts")
	sent := b.count(t, `request_count > 0`)
	require.Less(t, sent, 500, "most events were deferred, not sent")
	t.Logf("requests %d, events ever sent %d", len(arrivals), sent)
}

func offsets(ts []time.Time, from time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(from).Round(time.Millisecond)
	}
	return out
}

// An event deferred while another replica's probe is in flight is sent as soon as the
// circuit closes, even when the close (and its hastening) happened just before the
// deferral was written: not after the probe's 30 s lease, nor at the next tick (a
// minute here), whether the event was waiting when the dispatcher started or came
// once it was idle, its start-up wakes spent.
func TestDeferralAfterTheCircuitClosedIsHastened(t *testing.T) {
	t.Parallel()
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			t.Parallel()
			deferralAfterTheCircuitClosed(t, idle)
		})
	}
}

func deferralAfterTheCircuitClosed(t *testing.T, idle bool) {
	b := newBundle(t)
	ctx := context.Background()
	delivered := make(chan struct{}, 1)
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))

	// A cool-down of a microsecond is over by the next statement's now(): this test is
	// about the probe, not the wait before it.
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	tr, err := br.Failure(ctx, b.db, b.url, breaker.Permit{})
	require.NoError(t, err)
	require.Equal(t, breaker.Opened, tr)
	probe, err := br.Acquire(ctx, b.db, b.url) // another replica's probe: half-open for 30 s
	require.NoError(t, err)
	require.True(t, probe.Probe)

	if !idle {
		b.enqueue(t, "agg", 1)
	}
	// The probe succeeds between the dispatcher's look at the half-open circuit and
	// its deferral.
	obs := &onFirstDeferral{t: t, label: "circuit_open", do: func() error {
		tr, err := br.Success(ctx, b.db, b.url, probe)
		if err == nil && tr != breaker.Recovered {
			err = fmt.Errorf("the probe's success did not close the circuit: %q", tr)
		}
		return err
	}}
	b.runWith(t, delivery.Config{Owner: "replica", Concurrency: 4, Batch: 10, Interval: time.Minute,
		Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 10}, delivery.Deps{Breaker: br, Observer: obs})
	if idle {
		time.Sleep(500 * time.Millisecond) // the scenario: a dispatcher whose start-up wakes are spent
		b.enqueue(t, "agg", 1)
	}

	select {
	case <-delivered:
	case <-time.After(5 * time.Second):
		t.Fatal("the deferred event was not sent within 5 s of the circuit closing")
	}
}

// Only receiver faults open the circuit: a receiver answering 409 ("not yet") to every
// event, under concurrency, with a threshold of 2, never opens it, while one answering
// 408 (or timing out) does.
func TestBreakerCountsOnlyReceiverFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
		opens bool
	}{
		{"409 never opens", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusConflict) }, false},
		{"425 never opens", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTooEarly) }, false},
		{"408 opens", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusRequestTimeout) }, true},
		{"timeouts open", func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client hang up
			<-r.Context().Done()
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t)
			b.serve(t, http.HandlerFunc(c.serve))
			b.enqueueEach(t, b.url, keys("k", 40))
			br := b.newBreaker(t, breaker.Config{Threshold: 2, Cooldown: time.Hour, ProbeLease: 5 * time.Second})
			b.runWith(t, delivery.Config{Owner: "replica", Concurrency: 8, Batch: 40, Interval: 100 * time.Millisecond,
				Timeout: 200 * time.Millisecond, Backoff: backoff.Schedule{10 * time.Millisecond}, MaxAttempts: 1000},
				delivery.Deps{Breaker: br})

			if !c.opens {
				// Wait for well over 40 × 3 answers, then look at the circuit.
				b.observed.wait(t, 20*time.Second, "120 answers", func(h *history) bool { return h.count(isSent) >= 120 })
				state, err := br.State(context.Background(), b.db, b.url)
				require.NoError(t, err)
				require.Equal(t, breaker.Closed, state)
				return
			}
			b.observed.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
			state, err := br.State(context.Background(), b.db, b.url)
			require.NoError(t, err)
			require.Equal(t, breaker.Open, state)
		})
	}
}

// Batch mode: a failing batch is told to the circuit before the next request asks it.
// With one batch in flight no request goes after the threshold-th failure opened the
// circuit; at the default of two, at most the one admitted beside it.
func TestBatchFailureIsCountedBeforeTheNextRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		concurrency int // 0: the default
		most        int64
	}{{1, 3}, {0, 3 + delivery.BatchConcurrency - 1}} {
		t.Run(fmt.Sprintf("concurrency=%d", c.concurrency), func(t *testing.T) {
			t.Parallel()
			b := newBundle(t)
			var requests atomic.Int64
			b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				requests.Add(1)
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			b.enqueueEach(t, b.url, keys("k", 40))
			br := b.newBreaker(t, breaker.Config{Threshold: 3, Cooldown: time.Hour, ProbeLease: 5 * time.Second})
			cfg := batchMode(delivery.Config{Batch: 1, Concurrency: c.concurrency, MaxAttempts: 1000})
			cfg.Backoff = backoff.Schedule{time.Hour}
			b.runWith(t, cfg, delivery.Deps{Breaker: br})
			b.observed.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
			time.Sleep(500 * time.Millisecond) // time enough for a request that should not go
			t.Logf("requests: %d", requests.Load())
			require.GreaterOrEqual(t, requests.Load(), int64(3), "the threshold's failures")
			require.LessOrEqual(t, requests.Load(), c.most, "no request after the threshold-th failure but those admitted beside it")
		})
	}
}

// Single mode: a traced event the open circuit defers has its delivery.deliver span,
// which records the deferral.
func TestDeferralIsTraced(t *testing.T) {
	t.Parallel()
	b := setupTrace(t)
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Hour, ProbeLease: 5 * time.Second})
	_, err := br.Failure(context.Background(), b.db, b.url, breaker.Permit{})
	require.NoError(t, err)
	b.request(t, "agg-1")
	b.runWith(t, delivery.Config{Interval: time.Second, Backoff: backoff.Schedule{20 * time.Millisecond}},
		delivery.Deps{TracerProvider: b.tp, Breaker: br})
	b.observed.wait(t, 10*time.Second, "a deferral", func(h *history) bool { return h.count(deferred(outbox.DeferredByCircuit)) > 0 })
	// The span ends when its worker returns, just after the deferral is reported.
	require.Eventually(t, func() bool { return len(named(b.spans.GetSpans(), "delivery.deliver")) > 0 },
		5*time.Second, 10*time.Millisecond, "the deferral has a delivery.deliver span")
}

// A circuit statement of destination A that waits on a row lock holds up neither the
// events of destination B claimed with it nor the loop: each destination's requests ask
// their own circuit.
func TestSlowCircuitOfOneDestinationHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	ctx := context.Background()
	var gotB atomic.Int64
	firstB := make(chan time.Time, 1)
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" && gotB.Add(1) == 1 {
			firstB <- time.Now()
		}
	}))
	a, bb := b.url+"/a", b.url+"/b"
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	_, err := br.Failure(ctx, b.db, a, breaker.Permit{})
	require.NoError(t, err)
	tx, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SELECT 1 FROM kit_breakers WHERE destination = ? FOR UPDATE`, a)
	require.NoError(t, err)
	go func() { time.Sleep(4 * time.Second); _ = tx.Rollback() }()
	b.enqueueEach(t, a, keys("a", 1))
	b.enqueueEach(t, bb, keys("b", 1))
	start := time.Now()
	b.runWith(t, delivery.Config{Concurrency: 4, Batch: 10, Interval: time.Minute,
		Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 10}, delivery.Deps{Breaker: br})
	select {
	case at := <-firstB:
		t.Logf("B's event sent after %v", at.Sub(start))
		require.Less(t, at.Sub(start), time.Second)
	case <-time.After(8 * time.Second):
		t.Fatal("B's event not sent")
	}
}

// Batch mode at its default of two batches in flight, a backlog of five batches for a
// destination whose circuit is being probed, slowly, by this replica: while the probe
// is out the other slot defers at most the one batch it claimed before the probe
// began, not the backlog batch after batch; the events of another destination, claimed
// with them, keep going meanwhile; once the probe closes the circuit every event is
// delivered.
func TestBatchBehindAProbeDefersOneBatch(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	ctx := context.Background()
	release := make(chan struct{})
	var probes atomic.Int64
	recv := &batchReceiver{seenKey: map[string]int{}}
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/probed") && probes.Add(1) == 1 {
			<-release
		}
		recv.ServeHTTP(w, r)
	}))
	const batch = 10
	probed, healthy := b.url+"/probed", b.url+"/healthy"
	b.enqueueEach(t, probed, keys("p", 5*batch))
	b.enqueueEach(t, healthy, keys("h", 5*batch))
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	tr, err := br.Failure(ctx, b.db, probed, breaker.Permit{})
	require.NoError(t, err)
	require.Equal(t, breaker.Opened, tr)

	cfg := batchMode(delivery.Config{Batch: batch, MaxAttempts: 10})
	require.Zero(t, cfg.Concurrency, "the default number of batches in flight")
	b.runWith(t, cfg, delivery.Deps{Breaker: br})
	isDeferral := deferred(outbox.DeferredByCircuit)
	b.observed.wait(t, 10*time.Second, "the healthy destination's events, during the probe",
		func(h *history) bool { return h.count(delivered(healthy)) == 5*batch })
	time.Sleep(300 * time.Millisecond) // time enough to claim and defer the probed backlog, were it claimed
	close(release)
	var deferrals int
	b.observed.wait(t, 10*time.Second, "every event delivered", func(h *history) bool {
		deferrals = h.count(isDeferral)
		return h.count(delivered(probed)) == 5*batch
	})
	t.Logf("deferrals: %d", deferrals)
	require.LessOrEqual(t, deferrals, batch, "one batch at most deferred behind the probe")
}

// A replica that finds another replica's probe in flight defers what it claimed and
// then leaves the destination's events in the queue for a while: one claim deferred,
// not the backlog, in either mode.
func TestAnotherReplicasProbeDefersOneClaim(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode string) {
		b := newBundle(t)
		const claim = 10
		behindAnotherReplicasProbe(t, b, mode, claim)
		time.Sleep(500 * time.Millisecond) // within the hold: nothing more is claimed
		require.Equal(t, claim, b.count(t, "deferred_by = 'circuit_open'"), "one claim deferred behind the probe")
	})
}

// Behind another replica's probe, with the destination's backlog all there is, new
// events (each a wake-up) do not make an idle loop claim again and again, each claim
// reading past the whole backlog: it looks again when a request ends, a hold lifts or
// probeHold has passed.
func TestBehindAProbeNewEventsDoNotClaimEachTime(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode string) {
		b := newBundle(t)
		var rec *pgtest.Recorder
		b.db, rec = pgtest.OpenRecorded(t, b.dbURL)
		behindAnotherReplicasProbe(t, b, mode, 10)
		time.Sleep(50 * time.Millisecond) // the deferring requests end; the loop claims once more
		claims := func() (n int) {
			for _, sql := range rec.Take() {
				if strings.Contains(sql, "destination = ANY") {
					n++
				}
			}
			return n
		}
		claims()
		start := time.Now()
		b.enqueueEach(t, b.url, keys("new", 40)) // 40 commits, 40 wake-ups
		window := time.Since(start)
		n := claims()
		t.Logf("claims leaving the destination out over %v of new events: %d", window, n)
		require.LessOrEqual(t, n, 2*(1+int(window/time.Second)), "a claim or two per request ended, hold lifted or second, not per new event")
	})
}

// behindAnotherReplicasProbe runs a dispatcher of mode over b, claiming claim events
// at a time, with five claims' worth waiting for a destination whose circuit another
// replica is probing (half-open for 30 s), and waits until one claim was deferred.
func behindAnotherReplicasProbe(t *testing.T, b *bundle, mode string, claim int) {
	t.Helper()
	ctx := context.Background()
	b.serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.enqueueEach(t, b.url, keys("k", 5*claim))
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	_, err := br.Failure(ctx, b.db, b.url, breaker.Permit{})
	require.NoError(t, err)
	probe, err := br.Acquire(ctx, b.db, b.url)
	require.NoError(t, err)
	require.True(t, probe.Probe)

	cfg := batchMode(delivery.Config{Batch: claim, Concurrency: 1, MaxAttempts: 10})
	if mode == delivery.ModeSingle {
		cfg.Mode, cfg.Concurrency = delivery.ModeSingle, claim // one claim of claim events
	}
	b.runWith(t, cfg, delivery.Deps{Breaker: br})
	b.observed.wait(t, 10*time.Second, "one claim deferred behind the probe",
		func(h *history) bool { return h.count(deferred(outbox.DeferredByCircuit)) >= claim })
}

// Batch mode: the probe of a half-open circuit carries one event, so a receiver that
// stays down costs each probe one event's attempt, not a batch's.
func TestBatchProbeCarriesOneEvent(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	ctx := context.Background()
	var mu sync.Mutex
	var sizes []int
	recv := &batchReceiver{whole: []int{http.StatusServiceUnavailable}, seenKey: map[string]int{}}
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if req, ok := batchOf(w, body); ok {
			mu.Lock()
			sizes = append(sizes, len(req.Items))
			mu.Unlock()
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		recv.ServeHTTP(w, r)
	}))
	const batch = 10
	b.enqueueEach(t, b.url, keys("k", 3*batch))
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	_, err := br.Failure(ctx, b.db, b.url, breaker.Permit{})
	require.NoError(t, err)

	cfg := batchMode(delivery.Config{Batch: batch, MaxAttempts: 10})
	cfg.Backoff = backoff.Schedule{time.Millisecond}
	b.runWith(t, cfg, delivery.Deps{Breaker: br})
	b.observed.wait(t, 10*time.Second, "every event delivered", func(h *history) bool { return h.count(delivered(b.url)) == 3*batch })
	mu.Lock()
	defer mu.Unlock()
	t.Logf("request sizes: %v", sizes)
	require.GreaterOrEqual(t, len(sizes), 3)
	require.Equal(t, []int{1, 1}, sizes[:2], "the failed probe and the one that closed the circuit")
	require.Equal(t, 1, b.count(t, "request_count > 1"), "one event spent an attempt on the failed probe")
}
