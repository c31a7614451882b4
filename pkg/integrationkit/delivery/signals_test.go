package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// observed is the tests' Observer: it keeps everything the dispatchers report, in
// order, and wakes whoever waits at each report, so a test waits for what the
// dispatcher says it did instead of polling the table on a tick. A report never
// blocks a delivery goroutine: the history only grows, which a test can afford.
type observed struct {
	mu       sync.Mutex
	history  history
	reported signal
}

// history is what the dispatchers reported, in order: each outcome is committed when
// it is reported.
type history struct {
	settled     []settlement
	transitions []breaker.Transition
}

type settlement struct {
	rec outbox.Record
	out outbox.Outcome
}

func newObserved() *observed { return &observed{} }

func (o *observed) Settled(_ context.Context, rec outbox.Record, out outbox.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.history.settled = append(o.history.settled, settlement{rec: rec, out: out})
	o.reported.fire()
}

func (o *observed) CircuitChanged(_ context.Context, _ string, tr breaker.Transition, _ outbox.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.history.transitions = append(o.history.transitions, tr)
	o.reported.fire()
}

// wait returns once cond holds of the history, checking it at each report; after
// within it fails the test, saying what was awaited. The bound is a failure, not the
// synchronisation: a passing test waits only for the report it needs. cond runs
// under the observer's lock and must not call back into it.
func (o *observed) wait(t *testing.T, within time.Duration, what string, cond func(h *history) bool) {
	t.Helper()
	if !o.await(within, cond) {
		t.Fatalf("no report of %s within %s (%d outcomes reported)", what, within, o.outcomes())
	}
}

// await is wait for a test that says itself what went wrong: it reports whether cond
// came to hold within the bound.
func (o *observed) await(within time.Duration, cond func(h *history) bool) bool {
	return o.reported.await(within, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return cond(&o.history)
	})
}

// outcomes is how many outcomes were reported so far: a mark for waitFinal.
func (o *observed) outcomes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.history.settled)
}

// waitFinal waits until each of ids was settled delivered, failed or skipped in an
// outcome reported after the mark since. Take the mark before reading which events
// are pending: an event read pending settles after the read, and is reported after
// that, so after the mark; an event settled before, and since retried, is not taken
// for settled again.
func (o *observed) waitFinal(t *testing.T, within time.Duration, since int, ids []uuid.UUID) {
	t.Helper()
	o.wait(t, within, fmt.Sprintf("%d events settled for good", len(ids)), func(h *history) bool {
		final := (&history{settled: h.settled[since:]}).records(isFinal)
		for _, id := range ids {
			if !final[id] {
				return false
			}
		}
		return true
	})
}

// records is the set of records with at least one outcome that matches.
func (h *history) records(match func(settlement) bool) map[uuid.UUID]bool {
	set := map[uuid.UUID]bool{}
	for _, s := range h.settled {
		if match(s) {
			set[s.rec.ID] = true
		}
	}
	return set
}

// count is how many outcomes match.
func (h *history) count(match func(settlement) bool) int {
	n := 0
	for _, s := range h.settled {
		if match(s) {
			n++
		}
	}
	return n
}

// changes is how many times a circuit made the transition tr.
func (h *history) changes(tr breaker.Transition) int {
	n := 0
	for _, got := range h.transitions {
		if got == tr {
			n++
		}
	}
	return n
}

// isFinal matches an outcome that ends the event's delivery.
func isFinal(s settlement) bool { return s.out.Status != outbox.StatusPending }

// isSent matches an outcome of a request (one attempt row).
func isSent(s settlement) bool { return s.out.Sent }

// delivered matches a delivery to dest.
func delivered(dest string) func(settlement) bool {
	return func(s settlement) bool { return s.rec.Destination == dest && s.out.Status == outbox.StatusDelivered }
}

// deferred matches a deferral, without a request, for the reason deferredBy.
func deferred(deferredBy string) func(settlement) bool {
	return func(s settlement) bool { return !s.out.Sent && s.out.DeferredBy == deferredBy }
}

// onFirstDeferral is an Observer that runs do right after the first outcome labelled
// label (a deferral: circuit_open, paused), as another replica's change does when it
// commits between this replica's look at the circuit and its deferral: that change's
// own hastening came too early to see the deferred event.
type onFirstDeferral struct {
	t     *testing.T
	label string
	once  sync.Once
	do    func() error
}

func (o *onFirstDeferral) Settled(_ context.Context, _ outbox.Record, out outbox.Outcome) {
	if out.Label == o.label {
		o.once.Do(func() { require.NoError(o.t, o.do()) })
	}
}

func (o *onFirstDeferral) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {
}

// signal wakes whoever waits at each fire: a test's way to wait for what happened
// instead of polling for it on a tick.
type signal struct {
	mu    sync.Mutex
	fired chan struct{} // closed, and replaced, at each fire
}

// fire wakes every waiter.
func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired != nil {
		close(s.fired)
	}
	s.fired = make(chan struct{})
}

// next is closed at the next fire.
func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired == nil {
		s.fired = make(chan struct{})
	}
	return s.fired
}

// await reports whether cond came to hold within the bound, checking it at once and
// after each fire.
func (s *signal) await(within time.Duration, cond func() bool) bool {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		fired := s.next() // before cond: a fire while cond runs is not lost
		if cond() {
			return true
		}
		select {
		case <-fired:
		case <-timeout.C:
			return false
		}
	}
}
