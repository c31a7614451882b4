package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/webhook"
)

var breakerSchema = breaker.Schema("kit_breakers")

// With the receiver failing, 4 replicas and 500 pending events: once the circuit is
// open no request is sent during the cool-down, each half-open lets exactly one
// request through in the whole cluster, and deferred events keep their attempts.
func TestOpenCircuitSendsNothingAndProbesOnce(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, breakerSchema)
	require.NoError(t, err)

	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)

	for i := range 500 {
		_, err := store.Enqueue(ctx, db, outbox.Event{Type: "thing.happened", AggregateKey: fmt.Sprintf("agg-%d", i),
			Sequence: 1, IdempotencyKey: fmt.Sprintf("k-%d", i), Destination: srv.URL, Payload: map[string]int{"i": i}})
		require.NoError(t, err)
	}
	const cooldown = 2500 * time.Millisecond
	br, err := breaker.New(breaker.Config{Table: "kit_breakers", Threshold: 5, Cooldown: cooldown, ProbeLease: 5 * time.Second})
	require.NoError(t, err)
	obs := newObserved()
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Four replicas: each holds one of the test pool's connections for LISTEN.
	for i := range 4 {
		d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}), delivery.Config{
			Owner: fmt.Sprintf("replica-%d", i), Concurrency: 4, Batch: 10, Interval: 100 * time.Millisecond,
			Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 1000,
		}, delivery.Deps{Breaker: br, Observer: obs, Log: slog.New(slog.DiscardHandler), Guard: loopback(t)})
		require.NoError(t, err)
		wg.Go(func() { _ = d.Run(runCtx) })
	}
	defer func() { cancel(); wg.Wait() }()

	type circuit struct {
		State     breaker.State `bun:"state"`
		OpenUntil time.Time     `bun:"open_until"`
		ChangedAt time.Time     `bun:"changed_at"`
	}
	read := func() (c circuit) {
		_ = db.NewRaw(`SELECT state, coalesce(open_until, now()) AS open_until, changed_at FROM kit_breakers`).Scan(ctx, &c)
		return c
	}
	// Each transition is reported once its statement committed: the row read just
	// after it is the window it opened, which lasts a cool-down.
	obs.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
	first := read()
	require.Equal(t, breaker.Open, first.State)
	// Two more cool-downs: each must see exactly one probe.
	var windows []circuit
	for prev, k := first, 1; k <= 2; k++ {
		obs.wait(t, 10*time.Second, fmt.Sprintf("reopening %d", k), func(h *history) bool { return h.changes(breaker.Reopened) >= k })
		c := read()
		require.Equal(t, breaker.Open, c.State)
		require.True(t, c.OpenUntil.After(prev.OpenUntil), "a new cool-down")
		windows, prev = append(windows, c), c
	}
	cancel()
	wg.Wait()

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

	var sent, neverSentWithAttempts int
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE request_count > 0`).Scan(ctx, &sent))
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE request_count = 0 AND delivery_attempts > 0`).Scan(ctx, &neverSentWithAttempts))
	require.Zero(t, neverSentWithAttempts, "deferred events spend no attempts")
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

// closeOnDeferral closes the circuit right after the first event is deferred for it,
// as a probe on another replica does when it succeeds between this replica's look at
// the half-open circuit and its deferral: the close's own hastening came too early to
// see the deferred event.
type closeOnDeferral struct {
	t     *testing.T
	once  sync.Once
	close func() error
}

func (o *closeOnDeferral) Settled(_ context.Context, _ outbox.Record, out outbox.Outcome) {
	if out.Label == "circuit_open" {
		o.once.Do(func() { require.NoError(o.t, o.close()) })
	}
}

func (o *closeOnDeferral) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {
}

// An event deferred while another replica's probe is in flight is sent as soon as the
// circuit closes, even when the close (and its hastening) happened just before the
// deferral was written: not after the probe's 30 s lease.
func TestDeferralAfterTheCircuitClosedIsHastened(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, breakerSchema)
	require.NoError(t, err)
	delivered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)

	// A cool-down of a microsecond is over by the next statement's now(): this test is
	// about the probe, not the wait before it.
	br, err := breaker.New(breaker.Config{Table: "kit_breakers", Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	require.NoError(t, err)
	tr, err := br.Failure(ctx, db, srv.URL, breaker.Permit{})
	require.NoError(t, err)
	require.Equal(t, breaker.Opened, tr)
	probe, err := br.Acquire(ctx, db, srv.URL) // another replica's probe: half-open for 30 s
	require.NoError(t, err)
	require.True(t, probe.Probe)

	_, err = store.Enqueue(ctx, db, outbox.Event{Type: "thing.happened", AggregateKey: "agg", Sequence: 1,
		IdempotencyKey: "k-1", Destination: srv.URL, Payload: map[string]int{"i": 1}})
	require.NoError(t, err)
	obs := &closeOnDeferral{t: t, close: func() error {
		tr, err := br.Success(ctx, db, srv.URL, probe)
		if err == nil && tr != breaker.Recovered {
			err = fmt.Errorf("the probe's success did not close the circuit: %q", tr)
		}
		return err
	}}
	d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}), delivery.Config{
		Owner: "replica", Concurrency: 4, Batch: 10, Interval: time.Minute,
		Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 10,
	}, delivery.Deps{Breaker: br, Observer: obs, Log: slog.New(slog.DiscardHandler), Guard: loopback(t)})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()

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
			db, _, store := outboxtest.Setup(t)
			ctx := context.Background()
			_, err := db.ExecContext(ctx, breakerSchema)
			require.NoError(t, err)
			srv := httptest.NewServer(http.HandlerFunc(c.serve))
			t.Cleanup(srv.Close)
			for i := range 40 {
				_, err := store.Enqueue(ctx, db, outbox.Event{Type: "thing.happened", AggregateKey: fmt.Sprintf("agg-%d", i),
					Sequence: 1, IdempotencyKey: fmt.Sprintf("k-%d", i), Destination: srv.URL, Payload: map[string]int{"i": i}})
				require.NoError(t, err)
			}
			br, err := breaker.New(breaker.Config{Table: "kit_breakers", Threshold: 2, Cooldown: time.Hour, ProbeLease: 5 * time.Second})
			require.NoError(t, err)
			obs := newObserved()
			d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}), delivery.Config{
				Owner: "replica", Concurrency: 8, Batch: 40, Interval: 100 * time.Millisecond,
				Timeout: 200 * time.Millisecond, Backoff: backoff.Schedule{10 * time.Millisecond}, MaxAttempts: 1000,
			}, delivery.Deps{Breaker: br, Observer: obs, Log: slog.New(slog.DiscardHandler), Guard: loopback(t)})
			require.NoError(t, err)
			runCtx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = d.Run(runCtx) })
			defer func() { cancel(); wg.Wait() }()

			if !c.opens {
				// Wait for well over 40 × 3 answers, then look at the circuit.
				obs.wait(t, 20*time.Second, "120 answers", func(h *history) bool { return h.count(isSent) >= 120 })
				state, err := br.State(ctx, db, srv.URL)
				require.NoError(t, err)
				require.Equal(t, breaker.Closed, state)
				return
			}
			obs.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
			state, err := br.State(ctx, db, srv.URL)
			require.NoError(t, err)
			require.Equal(t, breaker.Open, state)
		})
	}
}
