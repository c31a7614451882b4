package pager

import (
	"sync"
)

// queue coalesces alerts by key in memory until the writer stores them: however many
// occurrences arrive, it holds at most one entry per key, so Notify is O(1), never
// blocks and memory stays bounded.
type queue struct {
	mu      sync.Mutex
	limit   int
	pending map[string]*entry
	dropped int
	ready   chan struct{}
}

// entry is the occurrences of one key since the last write: their count and the latest.
type entry struct {
	count  int64
	latest Alert
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, pending: map[string]*entry{}, ready: make(chan struct{}, 1)}
}

func (q *queue) add(a Alert) {
	q.merge(a.Key, &entry{count: 1, latest: a})
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// merge adds e to the key's entry; a new key beyond the limit is dropped and counted.
func (q *queue) merge(key string, e *entry) {
	q.mu.Lock()
	switch cur, ok := q.pending[key]; {
	case ok:
		cur.count += e.count
		cur.latest = e.latest
	case len(q.pending) < q.limit:
		q.pending[key] = e
	default:
		q.dropped++
	}
	q.mu.Unlock()
}

// take empties the queue and returns what it held and how many new keys were dropped.
func (q *queue) take() (map[string]*entry, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out, dropped := q.pending, q.dropped
	q.pending, q.dropped = map[string]*entry{}, 0
	return out, dropped
}

// putBack returns entries that could not be written, keeping newer occurrences; it
// does not signal the writer, which retries on its own timer.
func (q *queue) putBack(m map[string]*entry) {
	for key, e := range m {
		q.merge(key, e)
	}
}
