package delivery

import (
	"context"
	"maps"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// settleLinger is how long the settler waits for the other requests in flight to
// report before it settles what it has: a few events a statement instead of one, at
// the cost of at most this much delay before an outcome is recorded.
const settleLinger = time.Millisecond

// settler settles the outcomes of single requests in flight together in one fenced
// statement (outbox SettleMany), as a batch request's items are, and resets their
// destinations' failure streaks with one statement per destination. Each sender waits
// for its own answer, so what follows a settlement (the log line, the observer, the
// circuit's transitions) still happens after it and in the sender's context.
//
// A round begins with the first outcome to arrive and takes every outcome reported
// until each request in flight has reported, settleLinger has passed, or the round is
// full. It runs until its input is closed, which Run does once no request is in flight:
// an outcome held back for a round is settled, never dropped, when the dispatcher
// stops; a crash leaves its lease to expire like any other.
type settler struct {
	d        *Dispatcher
	in       chan settleCall
	inflight func() int // requests that may still report
	max      int
}

// settleCall is one request's outcome, with the permit whose failure streak its
// success resets (nil: none to reset), and where its answer goes.
type settleCall struct {
	item  outbox.Settlement
	reset *breaker.Permit
	done  chan settleAnswer
}

// settleAnswer is a settlement's fate: settled (false: its lease was taken over), or
// err when the statement failed; reset says the circuit's streak was reset with it.
type settleAnswer struct {
	settled, reset bool
	err            error
}

func newSettler(d *Dispatcher, inflight func() int, max int) *settler {
	return &settler{d: d, in: make(chan settleCall, max), inflight: inflight, max: max}
}

// settle hands item to the settler and waits for its answer; reset, when not nil, is
// the permit of a successful request.
func (s *settler) settle(item outbox.Settlement, reset *breaker.Permit) settleAnswer {
	c := settleCall{item: item, reset: reset, done: make(chan settleAnswer, 1)}
	s.in <- c
	return <-c.done
}

// run settles rounds until in is closed and drained; ctx's values (not its end) carry
// into each round.
func (s *settler) run(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for first := range s.in {
		s.round(ctx, s.gather(first))
	}
}

// gather is a round: first and whatever else reports before the round closes.
func (s *settler) gather(first settleCall) []settleCall {
	round := []settleCall{first}
	var linger <-chan time.Time
	for len(round) < s.max && len(round) < s.inflight() {
		select {
		case c, ok := <-s.in:
			if !ok {
				return round
			}
			round = append(round, c)
			continue
		default:
		}
		if linger == nil {
			t := time.NewTimer(settleLinger)
			defer t.Stop()
			linger = t.C
		}
		select {
		case c, ok := <-s.in:
			if !ok {
				return round
			}
			round = append(round, c)
		case <-linger:
			return round
		}
	}
	return round
}

// round settles calls in one statement, resets the streaks their successes break, and
// answers each. Two outcomes of one event (its lease expired and this dispatcher
// claimed it again before the first outcome was settled) are settled one after the
// other: only the one holding the current lease is written, and the statement's
// answer, by event, could not tell the other that it was not.
func (s *settler) round(ctx context.Context, calls []settleCall) {
	first, again := uniqueEvents(calls)
	s.settleEvents(ctx, first)
	for _, c := range again {
		s.settleEvents(ctx, []settleCall{c})
	}
}

// settleEvents is round for calls of distinct events.
func (s *settler) settleEvents(ctx context.Context, calls []settleCall) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	items := make([]outbox.Settlement, len(calls))
	for i, c := range calls {
		items[i] = c.item
	}
	settled, err := s.d.store.SettleMany(ctx, s.d.db, items)
	failed := map[uuid.UUID]error{}
	switch {
	case err != nil && len(items) > 1:
		// One item the statement refuses must not hold back the others: settle each
		// on its own, so only its own settlement fails (and its lease expires).
		settled, failed = s.each(ctx, items)
	case err != nil:
		failed[items[0].Record.ID] = err
	}
	reset := s.resetStreaks(ctx, calls, settled)
	for _, c := range calls {
		id := c.item.Record.ID
		c.done <- settleAnswer{settled: settled[id], reset: reset[id], err: failed[id]}
	}
}

// uniqueEvents splits calls into the first call of each event and the calls of an
// event already among them.
func uniqueEvents(calls []settleCall) (first, again []settleCall) {
	seen := make(map[uuid.UUID]bool, len(calls))
	for _, c := range calls {
		if id := c.item.Record.ID; seen[id] {
			again = append(again, c)
		} else {
			seen[id] = true
			first = append(first, c)
		}
	}
	return first, again
}

// each settles items one statement each, after their round's statement failed, and
// returns the settled ones and the error of each that failed.
func (s *settler) each(ctx context.Context, items []outbox.Settlement) (map[uuid.UUID]bool, map[uuid.UUID]error) {
	settled, failed := map[uuid.UUID]bool{}, map[uuid.UUID]error{}
	for _, it := range items {
		one, err := s.d.store.SettleMany(ctx, s.d.db, []outbox.Settlement{it})
		if err != nil {
			failed[it.Record.ID] = err
			continue
		}
		maps.Copy(settled, one)
	}
	return settled, failed
}

// resetStreaks records the settled successes with the circuits, one statement per
// destination and permit generation (a plain success changes no state, so one stands
// for all), and returns the ids of the events whose success was recorded.
func (s *settler) resetStreaks(ctx context.Context, calls []settleCall, settled map[uuid.UUID]bool) map[uuid.UUID]bool {
	type circuit struct {
		dest string
		p    breaker.Permit
	}
	done := map[circuit]bool{}
	out := map[uuid.UUID]bool{}
	for _, c := range calls {
		if c.reset == nil || !settled[c.item.Record.ID] {
			continue
		}
		k := circuit{c.item.Record.Destination, *c.reset}
		if _, tried := done[k]; !tried {
			_, err := s.d.breaker.Success(ctx, s.d.db, k.dest, k.p)
			if err != nil {
				s.d.log.WarnContext(ctx, "circuit update failed", "destination", k.dest, "err", err)
			}
			done[k] = err == nil
		}
		if done[k] {
			out[c.item.Record.ID] = true
		}
	}
	return out
}
