package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// answerBatch answers a batch request item by item with status(key).
func answerBatch(w http.ResponseWriter, r *http.Request, status func(key string) int) {
	var req delivery.BatchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var resp delivery.BatchResponse
	for _, it := range req.Items {
		resp.Items = append(resp.Items, delivery.BatchAnswer{IdempotencyKey: it.IdempotencyKey, Status: status(it.IdempotencyKey)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// mixedReceiver serves the single endpoint and, unless refuse says otherwise, the
// batch endpoint; it records the size of every batch request and every key applied.
type mixedReceiver struct {
	refuse func(items int) int // the status refusing a batch of n items, 0 to accept it

	mu      sync.Mutex
	batches []int
	singles int
	applied map[string]int
}

func (m *mixedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/batch") {
		m.singles++
		m.applied[r.Header.Get(delivery.HeaderIdempotencyKey)]++
		w.WriteHeader(http.StatusOK)
		return
	}
	var req delivery.BatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m.batches = append(m.batches, len(req.Items))
	if status := m.refuse(len(req.Items)); status != 0 {
		w.WriteHeader(status)
		return
	}
	var resp delivery.BatchResponse
	for _, it := range req.Items {
		m.applied[it.IdempotencyKey]++
		resp.Items = append(resp.Items, delivery.BatchAnswer{IdempotencyKey: it.IdempotencyKey, Status: http.StatusOK})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// A refusal of the whole batch request never dead-letters its events: a batch the
// receiver finds too large is split and never sent that large again, and a receiver
// without the batch endpoint (404, 405), or one that refuses its content type (415),
// gets single requests.
func TestBatchRefusalFallsBack(t *testing.T) {
	t.Parallel()
	const events, accepts = 60, 7
	cases := []struct {
		name   string
		refuse func(items int) int
	}{
		{"413 above 7 items", func(n int) int { return refuseAbove(n, accepts, http.StatusRequestEntityTooLarge) }},
		{"400 above 7 items", func(n int) int { return refuseAbove(n, accepts, http.StatusBadRequest) }},
		{"404 no batch endpoint", func(int) int { return http.StatusNotFound }},
		{"405 no batch endpoint", func(int) int { return http.StatusMethodNotAllowed }},
		{"415", func(int) int { return http.StatusUnsupportedMediaType }},
		{"204 without answers", func(int) int { return http.StatusNoContent }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, _, store := outboxtest.Setup(t)
			recv := &mixedReceiver{refuse: c.refuse, applied: map[string]int{}}
			srv := httptest.NewServer(recv)
			t.Cleanup(srv.Close)
			ctx := context.Background()
			for i := range events {
				key := fmt.Sprintf("k-%02d", i)
				_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: key, Sequence: 1,
					IdempotencyKey: key, Destination: srv.URL + "/hook", Payload: map[string]int{"i": i}})
				require.NoError(t, err)
			}
			obs := newObserved()
			startBatch(t, db, store, "batcher", delivery.Config{Batch: 100}, obs)
			obs.wait(t, 15*time.Second, "every event settled for good", func(h *history) bool { return len(h.records(isFinal)) == events })
			var counts []struct {
				Status string `bun:"delivery_status"`
				N      int    `bun:"n"`
			}
			require.NoError(t, db.NewRaw(`SELECT delivery_status, count(*) AS n FROM kit_outbox GROUP BY 1`).Scan(ctx, &counts))
			require.Len(t, counts, 1, "every event delivered, none failed: %+v", counts)
			require.Equal(t, outbox.StatusDelivered, counts[0].Status, "every event delivered, none failed")
			var attempts int
			require.NoError(t, db.NewRaw(`SELECT count(*) FROM kit_outbox_attempts`).Scan(ctx, &attempts))
			require.Equal(t, events, attempts, "a refused request is no attempt of its events")

			recv.mu.Lock()
			defer recv.mu.Unlock()
			require.Len(t, recv.applied, events)
			for key, n := range recv.applied {
				require.Equal(t, 1, n, "%s applied once", key)
			}
			if strings.Contains(c.name, "above") {
				require.Zero(t, recv.singles, "a batch too large is split, not sent one by one")
				accepted := false
				for _, n := range recv.batches {
					if accepted {
						require.LessOrEqual(t, n, accepts, "a batch larger than accepted is never built again")
					}
					accepted = accepted || n <= accepts
				}
				return
			}
			require.Equal(t, []int{events}, recv.batches, "one refused batch, then single requests")
			require.Equal(t, events, recv.singles)
		})
	}
}

func refuseAbove(n, limit, status int) int {
	if n > limit {
		return status
	}
	return 0
}
