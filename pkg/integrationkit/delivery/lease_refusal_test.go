package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
)

// A refused batch is never worked off under the one lease of its claim: a receiver
// that takes one item per batch and answers in 300 ms would make the 20 events of one
// claim take about 6 s of requests, longer than the 2.5 s lease, and a replica would
// then send events it no longer holds (twice on the wire, the first attempt never
// recorded). Every request that reaches the receiver is a settled attempt, and no
// event is sent again after a success.
func TestRefusedBatchNeverOutlivesItsLease(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	var mu sync.Mutex
	requests := map[string]int{}
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isBatch(r) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var req delivery.BatchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Items) > 1 {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		time.Sleep(300 * time.Millisecond) // a live, slowish receiver: well inside Timeout
		mu.Lock()
		requests[req.Items[0].IdempotencyKey]++
		mu.Unlock()
		answerBatch(w, req, accepted)
	}))

	const events = 20
	b.enqueueEach(t, b.url+"/hook", keys("k", events))
	stop := b.runWith(t, batchMode(delivery.Config{Owner: "splitter", Batch: 100,
		Timeout: time.Second, Lease: 2500 * time.Millisecond}), delivery.Deps{})

	describe := func() string {
		var rows []struct {
			Status   string `bun:"delivery_status"`
			Attempts int    `bun:"delivery_attempts"`
			Requests int    `bun:"request_count"`
			Err      string `bun:"last_error"`
			N        int    `bun:"n"`
		}
		_ = b.db.NewRaw(`SELECT delivery_status, delivery_attempts, request_count, coalesce(last_error, '') AS last_error, count(*) AS n
			FROM kit_outbox GROUP BY 1, 2, 3, 4`).Scan(context.Background(), &rows)
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("outbox %+v; receiver %v", rows, requests)
	}
	if !b.observed.await(30*time.Second, func(h *history) bool { return len(h.records(isFinal)) == events }) {
		t.Fatalf("not all settled in 30 s: %s", describe())
	}
	// Run returns once every job it started has finished (or, past ShutdownGrace, was
	// aborted): a job still sending under a lost lease has shown by then.
	require.NoError(t, stop())
	require.Zero(t, b.count(t, `delivery_status <> 'delivered'`), "all delivered: %s", describe())

	attempts := len(b.attempts(t))
	mu.Lock()
	defer mu.Unlock()
	sent, twice := 0, 0
	for _, n := range requests {
		sent += n
		if n > 1 {
			twice++
		}
	}
	require.Equal(t, sent, attempts, "every request that reached the receiver is a settled attempt")
	require.Zero(t, twice, "no event is sent again while its first request succeeded")
}
