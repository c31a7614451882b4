package delivery_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
)

// Single mode, 15 of 16 slots held by a hung receiver path: a new event of another
// path takes the free slot within the claim's linger, without waiting for a quorum of
// free slots.
func TestFreeSlotWaitsAtMostTheClaimLinger(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	var slowIn atomic.Int64
	fast := make(chan time.Time, 1)
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			slowIn.Add(1)
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		fast <- time.Now()
	}))
	b.enqueueEach(t, b.url+"/slow", keys("s", 15))
	b.start(t, delivery.Config{Concurrency: 16, Interval: time.Minute})
	deadline := time.Now().Add(5 * time.Second)
	for slowIn.Load() < 15 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.EqualValues(t, 15, slowIn.Load())
	start := time.Now()
	b.enqueueEach(t, b.url+"/fast", keys("f", 1))
	at := <-fast
	require.Less(t, at.Sub(start), time.Second)
}
