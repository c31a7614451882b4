package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/webhook"
)

// batchReceiver answers each item by a rule on its key, counts requests and records
// every item it was sent, in order.
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
	if err := webhook.NewVerifier([][]byte{secret}).Verify(r.Header, body); err != nil || !strings.HasSuffix(r.URL.Path, "/batch") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var req delivery.BatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
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
	var resp delivery.BatchResponse
	for _, it := range req.Items {
		b.seenKey[it.IdempotencyKey]++
		b.order = append(b.order, it)
		resp.Items = append(resp.Items, b.answer(it.IdempotencyKey, b.seenKey[it.IdempotencyKey]))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// startBatch runs a batch-mode dispatcher, reporting to obs, until the test ends or
// until stop, which returns when Run did: once every job it started has finished.
func startBatch(t *testing.T, db *bun.DB, store *outbox.Store, owner string, extra delivery.Config, obs delivery.Observer) (stop func()) {
	t.Helper()
	cfg := extra
	cfg.Mode, cfg.Owner = delivery.ModeBatch, owner
	cfg.Backoff = backoff.Schedule{20 * time.Millisecond}
	cfg.Interval = time.Second
	d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}), cfg,
		delivery.Deps{Log: slog.New(slog.DiscardHandler), Guard: loopback(t), Observer: obs})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); require.NoError(t, <-done) })
	t.Cleanup(stop)
	return stop
}

func TestBatchItemsAreAnsweredOneByOne(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
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
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	for _, key := range []string{"ok-1", "bad-1", "later-1", "flaky-1", "dup-1"} {
		_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: key, Sequence: 1, IdempotencyKey: key,
			Destination: srv.URL + "/hook", Payload: map[string]string{"k": key}})
		require.NoError(t, err)
	}
	obs := newObserved()
	startBatch(t, db, store, "batcher", delivery.Config{}, obs)
	var rows []struct {
		Key      string `bun:"idempotency_key"`
		Status   string `bun:"delivery_status"`
		Attempts int    `bun:"delivery_attempts"`
		Requests int    `bun:"request_count"`
		Reason   string `bun:"reason"`
	}
	obs.wait(t, 15*time.Second, "the 5 events settled for good", func(h *history) bool { return len(h.records(isFinal)) == 5 })
	require.NoError(t, db.NewRaw(`SELECT idempotency_key, delivery_status, delivery_attempts, request_count,
		coalesce(failed_reason, '') AS reason FROM kit_outbox ORDER BY idempotency_key`).Scan(ctx, &rows))
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
	var attemptRows int
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM kit_outbox_attempts`).Scan(ctx, &attemptRows))
	require.Equal(t, 13, attemptRows, "one attempt row per item per request")
}

func TestBatchReplicasDeliverEachEventOnceInOrder(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
	recv := &batchReceiver{seenKey: map[string]int{}, answer: func(key string, _ int) delivery.BatchAnswer {
		return delivery.BatchAnswer{IdempotencyKey: key, Status: http.StatusOK}
	}}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	require.NoError(t, db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for a := range 250 {
			for s := 1; s <= 4; s++ {
				agg := fmt.Sprintf("agg-%03d", a)
				if _, err := store.Enqueue(ctx, tx, outbox.Event{Type: "t", AggregateKey: agg, Sequence: int64(s),
					IdempotencyKey: fmt.Sprintf("%s:%d", agg, s), Destination: srv.URL, Payload: map[string]string{"agg": agg}}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	obs := newObserved()
	for i := range 3 {
		startBatch(t, db, store, fmt.Sprintf("replica-%d", i), delivery.Config{Batch: 100, Concurrency: 2}, obs)
	}
	obs.wait(t, 60*time.Second, "the 1000 events settled for good", func(h *history) bool { return len(h.records(isFinal)) == 1000 })
	var undelivered int
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE delivery_status <> 'delivered'`).Scan(ctx, &undelivered))
	require.Zero(t, undelivered)
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
