package delivery

import (
	"sync"
	"time"
)

// receivers remembers what each destination's receiver said about batches, so the
// dispatcher does not ask again what it was refused: the largest batch it accepts
// after it refused a larger one, and until when it gets single requests after its
// batch endpoint refused a request. It also knows which destinations' circuits are
// being probed, so their events are left in the queue rather than claimed only to be
// deferred behind the probe. The memory is this replica's own; another replica learns
// the same from its first refused request, or its first deferral behind a probe.
type receivers struct {
	mu          sync.Mutex
	limit       map[string]int
	singleUntil map[string]time.Time
	probing     map[string]int       // probe requests of this replica in flight
	heldUntil   map[string]time.Time // another replica's probe seen in flight
	lifted      uint64               // counts probes ended and holds lifted
}

func newReceivers() *receivers {
	return &receivers{limit: map[string]int{}, singleUntil: map[string]time.Time{},
		probing: map[string]int{}, heldUntil: map[string]time.Time{}}
}

// probe records that this replica's probe of dest is in flight until done is called.
func (r *receivers) probe(dest string) (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing[dest]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.probing[dest]--; r.probing[dest] <= 0 {
			delete(r.probing, dest)
		}
		r.lifted++
	}
}

// hold leaves dest's events in the queue until the given time: another replica's
// probe of it is in flight.
func (r *receivers) hold(dest string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heldUntil[dest] = until
}

// unhold ends a hold of dest: its circuit closed.
func (r *receivers) unhold(dest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.heldUntil[dest]; ok {
		delete(r.heldUntil, dest)
		r.lifted++
	}
}

// unclaimable lists the destinations whose events a claim now leaves in the queue:
// those probed by this replica, and those held for another's probe.
func (r *receivers) unclaimable() (out []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for dest := range r.probing {
		out = append(out, dest)
	}
	now := time.Now()
	for dest, until := range r.heldUntil {
		switch {
		case !now.Before(until):
			delete(r.heldUntil, dest)
			r.lifted++
		case r.probing[dest] == 0:
			out = append(out, dest)
		}
	}
	return out
}

// liftedCount counts the probes ended and holds lifted so far: while it stays the
// same, the list unclaimable gives has not shrunk.
func (r *receivers) liftedCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lifted
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
