package delivery_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/webhook"
)

// batchReceiver answers each item by a rule on its key (200 to every item when answer
// is nil), counts requests and records every item it was sent, in order.
type batchReceiver struct {
	mu       sync.Mutex
	requests int
	whole    []int // statuses for whole requests, consumed in turn (then 200)
	answer   func(key string, seen int) delivery.BatchAnswer
	seenKey  map[string]int
	order    []delivery.BatchItem
}

func (b *batchReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := webhook.NewVerifier([][]byte{secret}).Verify(r.Header, body); err != nil || !isBatch(r) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	req, ok := batchOf(w, body)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	if len(b.whole) > 0 {
		status := b.whole[0]
		b.whole = b.whole[1:]
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
	}
	answerBatch(w, req, func(it delivery.BatchItem) delivery.BatchAnswer {
		b.seenKey[it.IdempotencyKey]++
		b.order = append(b.order, it)
		if b.answer == nil {
			return accepted(it)
		}
		return b.answer(it.IdempotencyKey, b.seenKey[it.IdempotencyKey])
	})
}

// batchMode is cfg in batch mode, retrying after 20 ms.
func batchMode(cfg delivery.Config) delivery.Config {
	cfg.Mode = delivery.ModeBatch
	cfg.Backoff = backoff.Schedule{20 * time.Millisecond}
	cfg.Interval = time.Second
	return cfg
}

func TestBatchItemsAreAnsweredOneByOne(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	recv := &batchReceiver{whole: []int{http.StatusServiceUnavailable}, seenKey: map[string]int{},
		answer: func(key string, seen int) delivery.BatchAnswer {
			a := delivery.BatchAnswer{IdempotencyKey: key, Status: http.StatusOK}
			switch {
			case strings.HasPrefix(key, "bad"):
				a.Status = http.StatusBadRequest
			case strings.HasPrefix(key, "later") && seen == 1:
				a.Status, a.RetryAfter = http.StatusConflict, 1
			case strings.HasPrefix(key, "flaky") && seen <= 2:
				a.Status = http.StatusInternalServerError
			case strings.HasPrefix(key, "dup"):
				a.Duplicate = true
			}
			return a
		}}
	b.serve(t, recv)
	b.enqueueEach(t, b.url+"/hook", []string{"ok-1", "bad-1", "later-1", "flaky-1", "dup-1"})
	b.runWith(t, batchMode(delivery.Config{Owner: "batcher"}), delivery.Deps{})
	var rows []struct {
		Key      string `bun:"idempotency_key"`
		Status   string `bun:"delivery_status"`
		Attempts int    `bun:"delivery_attempts"`
		Requests int    `bun:"request_count"`
		Reason   string `bun:"reason"`
	}
	b.observed.wait(t, 15*time.Second, "the 5 events settled for good", func(h *history) bool { return len(h.records(isFinal)) == 5 })
	require.NoError(t, b.db.NewRaw(`SELECT idempotency_key, delivery_status, delivery_attempts, request_count,
		coalesce(failed_reason, '') AS reason FROM kit_outbox ORDER BY idempotency_key`).Scan(context.Background(), &rows))
	got := map[string]string{}
	for _, r := range rows {
		got[r.Key] = fmt.Sprintf("%s attempts=%d requests=%d %s", r.Status, r.Attempts, r.Requests, r.Reason)
	}
	require.Equal(t, map[string]string{
		"bad-1":   "failed attempts=2 requests=2 rejected_by_receiver", // the 503 counted against every item
		"dup-1":   "delivered attempts=2 requests=2 ",
		"flaky-1": "delivered attempts=4 requests=4 ",
		"later-1": "delivered attempts=3 requests=3 ", // a 409 is counted, as alone
		"ok-1":    "delivered attempts=2 requests=2 ",
	}, got)
	require.Len(t, b.attempts(t), 13, "one attempt row per item per request")
}

func TestBatchReplicasDeliverEachEventOnceInOrder(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	recv := &batchReceiver{seenKey: map[string]int{}}
	b.serve(t, recv)
	b.enqueueAggregates(t, 250, 4)
	b.replicas(t, 3, batchMode(delivery.Config{Batch: 100, Concurrency: 2}), delivery.Deps{})
	b.observed.wait(t, 60*time.Second, "the 1000 events settled for good", func(h *history) bool { return len(h.records(isFinal)) == 1000 })
	require.Zero(t, b.count(t, `delivery_status <> 'delivered'`))
	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Len(t, recv.order, 1000, "each event sent exactly once")
	last := map[string]int64{}
	for _, it := range recv.order {
		agg, _, _ := strings.Cut(it.IdempotencyKey, ":")
		require.Equal(t, last[agg]+1, it.Event.Sequence, "per-aggregate order across batches and replicas")
		last[agg] = it.Event.Sequence
	}
}

// An aggregate's events go one batch after another as fast as each is settled: the
// end of a batch's settlement wakes the loop, whose claim then takes the next event.
// The safety-net tick is a minute: nothing here may wait for it.
func TestNextEventGoesOnceItsPredecessorIsSettled(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	recv := &batchReceiver{seenKey: map[string]int{}}
	b.serve(t, recv)
	b.url += "/hook"
	const events = 6
	for seq := int64(1); seq <= events; seq++ {
		b.enqueue(t, "agg", seq)
	}
	cfg := batchMode(delivery.Config{})
	cfg.Interval = time.Minute
	b.runWith(t, cfg, delivery.Deps{})
	for _, r := range b.waitSettled(t, 5*time.Second) {
		require.Equal(t, "delivered", r.Status)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Equal(t, events, recv.requests, "one batch per event: each waits for the one before")
}
