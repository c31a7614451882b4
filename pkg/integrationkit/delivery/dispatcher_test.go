package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

func TestOutcomesAgainstAScriptedReceiver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		script   []func(w http.ResponseWriter)
		max      int
		status   string
		attempts int
		requests int
		reason   string
	}{
		{"500 503 200 delivers at attempt 3", []func(http.ResponseWriter){status(500), status(503)}, 8, "delivered", 3, 3, ""},
		{"400 dead-letters after one request", []func(http.ResponseWriter){status(400)}, 8, "failed", 1, 1, "rejected_by_receiver"},
		{"301 dead-letters at once", []func(http.ResponseWriter){status(301, "Location", "http://example.com/")}, 8, "failed", 1, 1, "redirect_not_followed"},
		{"500 x4 with max 4 fails after 4", []func(http.ResponseWriter){status(500), status(500), status(500), status(500)}, 4, "failed", 4, 4, "max_attempts_exhausted"},
		{"429 Retry-After 1 does not spend the budget", []func(http.ResponseWriter){status(429, "Retry-After", "1")}, 8, "delivered", 1, 2, ""},
		{"401 is retried and counted", []func(http.ResponseWriter){status(401)}, 8, "delivered", 2, 2, ""},
		{"409 is retried", []func(http.ResponseWriter){status(409)}, 8, "delivered", 2, 2, ""},
		{"422 dead-letters", []func(http.ResponseWriter){status(422)}, 8, "failed", 1, 1, "rejected_by_receiver"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.script...)
			b.enqueue(t, "agg-1", 1)
			start := time.Now()
			b.start(t, delivery.Config{MaxAttempts: c.max, Interval: time.Second})
			rows := b.waitSettled(t, 10*time.Second)
			require.Len(t, rows, 1)
			require.Equal(t, c.status, rows[0].Status)
			require.Equal(t, c.attempts, rows[0].Attempts, "counted attempts")
			require.Equal(t, c.requests, rows[0].Requests, "requests")
			require.Equal(t, c.reason, rows[0].Reason)
			require.False(t, rows[0].Leased)
			seen := b.recv.seen()
			require.Len(t, seen, c.requests)
			for i, s := range seen {
				require.Equal(t, i+1, s.attempt, "X-Attempt counts requests")
				require.Equal(t, "thing.happened:agg-1:1", s.key, "the key is stable across attempts")
			}
			if c.name == "429 Retry-After 1 does not spend the budget" {
				require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After honoured")
			}
			require.Len(t, b.attempts(t), c.requests, "one attempt row per request")
		})
	}
}

func TestAggregatesAreDeliveredInSequence(t *testing.T) {
	t.Parallel()
	// The first event of agg-a fails twice: agg-a's later events must wait, agg-b not.
	b := setup(t, status(503), status(503))
	for seq := int64(1); seq <= 3; seq++ {
		b.enqueue(t, "agg-a", seq)
	}
	for seq := int64(1); seq <= 3; seq++ {
		b.enqueue(t, "agg-b", seq)
	}
	b.start(t, delivery.Config{Concurrency: 4})
	rows := b.waitSettled(t, 10*time.Second)
	for _, r := range rows {
		require.Equal(t, outbox.StatusDelivered, r.Status)
	}
	last := map[string]int64{}
	for _, s := range b.recv.seen() {
		agg := s.envelope.Data
		var data struct {
			Aggregate string `json:"aggregate"`
			Seq       int64  `json:"seq"`
		}
		require.NoError(t, json.Unmarshal(agg, &data))
		require.GreaterOrEqual(t, data.Seq, last[data.Aggregate], "sequence never goes back within an aggregate")
		require.LessOrEqual(t, data.Seq, last[data.Aggregate]+1, "no event overtakes an undelivered one")
		last[data.Aggregate] = data.Seq
		require.Equal(t, data.Seq, s.envelope.Sequence)
	}
}

func TestDeadHeadBlocksOnlyItsAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, status(400))
	b.enqueue(t, "agg-a", 1)
	b.start(t, delivery.Config{})
	b.waitSettled(t, 5*time.Second)
	b.enqueue(t, "agg-a", 2)
	b.enqueue(t, "agg-b", 1)
	b.observed.wait(t, 5*time.Second, "agg-b/1 delivered", func(h *history) bool {
		return h.count(func(s settlement) bool { return s.rec.AggregateKey == "agg-b" && isFinal(s) }) == 1
	})
	rows := b.rows(t)
	require.Len(t, rows, 3)
	require.Equal(t, []string{"failed", "pending", "delivered"}, []string{rows[0].Status, rows[1].Status, rows[2].Status},
		"agg-a/1 failed, agg-a/2 pending behind it, agg-b/1 delivered")
	require.Len(t, b.recv.seen(), 2, "the blocked event is never sent")
}

func TestReplicasDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const aggregates, perAggregate = 250, 4
	b.enqueueAggregates(t, aggregates, perAggregate)
	b.replicas(t, 3, delivery.Config{Concurrency: 8, Batch: 50, Backoff: backoff.Schedule{20 * time.Millisecond}}, delivery.Deps{})
	b.waitSettled(t, 60*time.Second)
	seen := b.recv.seen()
	require.Len(t, seen, aggregates*perAggregate, "each event sent exactly once")
	count := map[string]int{}
	last := map[string]int64{}
	for _, s := range seen {
		count[s.key]++
		var data struct {
			Aggregate string `json:"aggregate"`
		}
		require.NoError(t, json.Unmarshal(s.envelope.Data, &data))
		require.Equal(t, last[data.Aggregate]+1, s.envelope.Sequence, "per-aggregate order")
		last[data.Aggregate] = s.envelope.Sequence
	}
	for k, n := range count {
		require.Equal(t, 1, n, k)
	}
}

func TestLateWorkerCannotOverwriteANewerLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, "agg-1", 1)
	ctx := context.Background()
	// A zero lease has lapsed by the next statement's now().
	first, err := b.store.Claim(ctx, b.db, "slow", 10, 0)
	require.NoError(t, err)
	require.Len(t, first, 1)
	second, err := b.store.Claim(ctx, b.db, "fast", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1, "an expired lease is claimed again")
	require.NoError(t, b.store.Settle(ctx, b.db, second[0], outbox.Outcome{Status: outbox.StatusDelivered, Counted: true, Sent: true, StartedAt: time.Now(), Label: "delivered"}))
	err = b.store.Settle(ctx, b.db, first[0], outbox.Outcome{Status: outbox.StatusFailed, Counted: true, Sent: true, StartedAt: time.Now(), Label: "dead_letter", FailedReason: "x"})
	require.ErrorIs(t, err, outbox.ErrLeaseLost)
	rows := b.rows(t)
	require.Equal(t, outbox.StatusDelivered, rows[0].Status)
	require.Equal(t, 1, rows[0].Requests)
}

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
