package delivery_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
)

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
