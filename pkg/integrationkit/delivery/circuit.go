package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// admit asks the circuit of the records' destination whether they may be sent; the
// same statement says whether an operator paused the destination, so a pause costs no
// extra round trip per event. When they may not be sent, they are deferred until the
// circuit can admit again, or for the breaker's PausedWait: no request, no attempt
// spent, and each keeps the last error of its last request, so on-call sees the cause
// and not the circuit. Deferred behind a probe in flight, the destination is then left
// out of this replica's claims for probeHold (as it is while this replica's own probe
// is out): the rest of its backlog waits in the queue, not deferred claim after claim.
// All records share one destination.
func (d *Dispatcher) admit(ctx context.Context, recs []outbox.Record) (breaker.Permit, bool) {
	if d.breaker == nil {
		return breaker.Permit{Allowed: true}, true
	}
	ctx, cancel := settleContext(ctx)
	defer cancel()
	p, err := d.breaker.Acquire(ctx, d.db, recs[0].Destination)
	return d.admitted(ctx, recs, p, err)
}

// admission is one question to the circuit shared by the single requests of one
// claim's events to one destination: the first to ask asks for all, in one statement,
// and the others wait for its answer. One permit stands for requests sent together as
// it would for requests admitted one by one at the same moment: each success resets,
// each failure counts in the circuit's generation.
type admission struct {
	once   sync.Once
	permit breaker.Permit
	err    error
	probed atomic.Bool // a probe permit's one request is taken
}

// admitShared is admit for rec, one of the events a shares its question for. Under a
// probe only the first to ask goes; the others go back to the queue at once, and stay
// there, unclaimed, while the probe is out.
func (d *Dispatcher) admitShared(ctx context.Context, rec outbox.Record, a *admission) (breaker.Permit, bool) {
	if d.breaker == nil {
		return breaker.Permit{Allowed: true}, true
	}
	ctx, cancel := settleContext(ctx)
	defer cancel()
	a.once.Do(func() { a.permit, a.err = d.breaker.Acquire(ctx, d.db, rec.Destination) })
	if a.err == nil && a.permit.Probe && !a.probed.CompareAndSwap(false, true) {
		d.release(ctx, []outbox.Record{rec})
		return breaker.Permit{}, false
	}
	return d.admitted(ctx, []outbox.Record{rec}, a.permit, a.err)
}

// admitted is admit's verdict on recs once the circuit answered p (or failed, err).
func (d *Dispatcher) admitted(ctx context.Context, recs []outbox.Record, p breaker.Permit, err error) (breaker.Permit, bool) {
	dest := recs[0].Destination
	if err != nil {
		// Without the circuit's state nothing is sent: the circuit may be open. The
		// events go back to the queue untouched (or their leases expire).
		d.log.WarnContext(ctx, "circuit state unavailable; events released", "events", len(recs), "err", err)
		d.release(ctx, recs)
		return p, false
	}
	if p.Allowed {
		return p, true
	}
	pol, now := d.policy(), time.Now()
	items := make([]outbox.Settlement, len(recs))
	for i, rec := range recs {
		deferral := pol.decide(result{held: &p}, rec.Attempts, now)
		items[i] = outbox.Settlement{Record: rec, Outcome: deferral.outcome()}
	}
	if len(items) == 1 {
		recordOutcome(trace.SpanFromContext(ctx), items[0].Outcome)
	}
	d.settle(ctx, items)
	switch {
	case p.Paused:
		d.log.DebugContext(ctx, "events deferred: destination paused", "destination", dest, "events", len(recs))
		d.hastenIfResumed(ctx, dest)
	case p.ProbeInFlight:
		d.receivers.hold(dest, time.Now().Add(min(p.Wait, probeHold)))
		d.hastenIfClosed(ctx, dest)
	}
	return p, false
}

// probeHold is how long a replica that found another's probe of a destination in
// flight leaves that destination's events in the queue (at most the probe's lease):
// it defers one claim's events behind the probe, not its whole backlog claim after
// claim, and looks again after this long, or at once if it sees the circuit close.
const probeHold = time.Second

// hastenIfClosed hastens dest's circuit-deferred events if its circuit is closed. A
// circuit that closes hastens what was deferred until then; a deferral written after
// that (its worker saw the circuit half-open just before the probe closed it) would
// otherwise wait out the probe's lease, 30 s by default, with the destination up.
// Looking again after a deferral behind a probe closes that gap; a deferral of an open
// circuit comes due by itself when the circuit may probe.
func (d *Dispatcher) hastenIfClosed(ctx context.Context, dest string) {
	if state, err := d.breaker.State(ctx, d.db, dest); err == nil && state == breaker.Closed {
		d.receivers.unhold(dest)
		d.hasten(ctx, dest, outbox.DeferredByCircuit, "circuit closed meanwhile")
	}
}

// hastenIfResumed hastens dest's pause-deferred events if dest is no longer paused.
// Resuming hastens what was deferred until its commit; a deferral written after that
// (its worker saw the pause just before) would otherwise wait out PausedWait. Looking
// again after every pause deferral closes that gap, at the cost of one statement per
// deferral, paid only while a destination is paused.
func (d *Dispatcher) hastenIfResumed(ctx context.Context, dest string) {
	if paused, err := d.breaker.Paused(ctx, d.db, dest); err == nil && !paused {
		d.hasten(ctx, dest, outbox.DeferredByPause, "destination resumed meanwhile")
	}
}

// hasten makes dest's events deferred for deferredBy due now, and wakes the loop to
// claim them; why names the occasion in the log.
func (d *Dispatcher) hasten(ctx context.Context, dest, deferredBy, why string) {
	n, err := d.store.Hasten(ctx, d.db, dest, deferredBy)
	if err != nil {
		d.log.WarnContext(ctx, why+"; hastening the deferred events failed, they wait out their deferral",
			"destination", dest, "err", err)
		return
	}
	d.log.InfoContext(ctx, why, "destination", dest, "hastened", n)
	if n > 0 {
		d.Wake()
	}
}

// recordCircuit feeds a request's verdict to the circuit of rec's destination.
func (d *Dispatcher) recordCircuit(ctx context.Context, rec outbox.Record, p breaker.Permit, v verdict) {
	if d.breaker == nil || v == neutral {
		return
	}
	var tr breaker.Transition
	var err error
	if v == failing {
		tr, err = d.breaker.Failure(ctx, d.db, rec.Destination, p)
	} else {
		tr, err = d.breaker.Success(ctx, d.db, rec.Destination, p)
	}
	if err != nil {
		d.log.WarnContext(ctx, "circuit update failed", "destination", rec.Destination, "err", err)
		return
	}
	if tr != "" {
		d.observer.CircuitChanged(ctx, rec.Destination, tr, rec)
	}
	switch tr {
	case breaker.Opened, breaker.Reopened:
		d.log.ErrorContext(ctx, "circuit "+string(tr), "destination", rec.Destination, "event_id", rec.ID)
	case breaker.Recovered:
		d.receivers.unhold(rec.Destination)
		d.hasten(ctx, rec.Destination, outbox.DeferredByCircuit, "circuit closed")
	}
}

// spread is a small random delay so deferred events do not all come due at once.
func (d *Dispatcher) spread() time.Duration {
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return time.Duration(d.rand.Int64N(int64(time.Second)))
}
