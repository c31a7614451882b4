package delivery_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

// Batch mode: a failing batch is told to the circuit before the next request asks it,
// so no request goes after the threshold-th failure opened the circuit.
func TestBatchFailureIsCountedBeforeTheNextRequest(t *testing.T) {
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
	cfg := batchMode(delivery.Config{Batch: 1, MaxAttempts: 1000})
	cfg.Backoff = backoff.Schedule{time.Hour}
	b.runWith(t, cfg, delivery.Deps{Breaker: br})
	b.observed.wait(t, 10*time.Second, "the circuit opening", func(h *history) bool { return h.changes(breaker.Opened) > 0 })
	time.Sleep(500 * time.Millisecond)
	t.Logf("requests: %d", requests.Load())
	require.EqualValues(t, 3, requests.Load(), "no request after the threshold-th failure")
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
