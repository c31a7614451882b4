package delivery_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

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
	if !isBatch(r) {
		m.singles++
		m.applied[r.Header.Get(delivery.HeaderIdempotencyKey)]++
		w.WriteHeader(http.StatusOK)
		return
	}
	req, ok := batchOf(w, body)
	if !ok {
		return
	}
	m.batches = append(m.batches, len(req.Items))
	if status := m.refuse(len(req.Items)); status != 0 {
		w.WriteHeader(status)
		return
	}
	answerBatch(w, req, func(it delivery.BatchItem) delivery.BatchAnswer {
		m.applied[it.IdempotencyKey]++
		return accepted(it)
	})
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
			b := newBundle(t)
			recv := &mixedReceiver{refuse: c.refuse, applied: map[string]int{}}
			b.serve(t, recv)
			b.enqueueEach(t, b.url+"/hook", keys("k", events))
			// One batch in flight, so the order the receiver sees is the order batches are
			// built in: with two, a batch built before a refusal lowered the limit may
			// arrive after a smaller one was accepted.
			b.runWith(t, batchMode(delivery.Config{Owner: "batcher", Batch: 100, Concurrency: 1}), delivery.Deps{})
			b.observed.wait(t, 15*time.Second, "every event settled for good", func(h *history) bool { return len(h.records(isFinal)) == events })
			require.Equal(t, events, b.count(t, `delivery_status = ?`, outbox.StatusDelivered), "every event delivered, none failed")
			require.Len(t, b.attempts(t), events, "a refused request is no attempt of its events")

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
