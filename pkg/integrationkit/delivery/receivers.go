package delivery

import (
	"sync"
	"time"
)

// receivers remembers what each destination's receiver said about batches, so the
// dispatcher does not ask again what it was refused: the largest batch it accepts
// after it refused a larger one, and until when it gets single requests after its
// batch endpoint refused a request. The memory is this replica's own; another replica
// learns the same from its first refused request.
type receivers struct {
	mu          sync.Mutex
	limit       map[string]int
	singleUntil map[string]time.Time
}

func newReceivers() *receivers {
	return &receivers{limit: map[string]int{}, singleUntil: map[string]time.Time{}}
}

// batchLimit is the largest batch dest accepts, at most max.
func (r *receivers) batchLimit(dest string, max int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.limit[dest]; ok && l < max {
		return l
	}
	return max
}

// lowerBatchLimit records that dest refused a larger batch than n (at least 1) and
// returns the limit now in force.
func (r *receivers) lowerBatchLimit(dest string, n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = max(n, 1)
	if l, ok := r.limit[dest]; !ok || n < l {
		r.limit[dest] = n
	}
	return r.limit[dest]
}

// preferSingle sends dest single requests until the given time.
func (r *receivers) preferSingle(dest string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.singleUntil[dest] = until
}

// singleOnly reports whether dest gets single requests now.
func (r *receivers) singleOnly(dest string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.singleUntil[dest]
	if ok && time.Now().After(until) {
		delete(r.singleUntil, dest)
		return false
	}
	return ok
}

// claimLimit is how many events one claim of a batch-mode dispatcher should take, at
// most max: no more than the smallest batch a destination accepts, or than one round
// of single requests while a destination gets those, so that little is claimed only
// to be released. (With several destinations this is conservative.)
func (r *receivers) claimLimit(max int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := max
	for _, l := range r.limit {
		n = min(n, l)
	}
	now := time.Now()
	for _, until := range r.singleUntil {
		if now.Before(until) {
			n = min(n, eachInFlight)
		}
	}
	return n
}
