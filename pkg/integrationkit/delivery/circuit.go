package delivery

import (
	"context"
	"time"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// admit asks the destination's circuit whether rec may be sent. When it may not, the
// event is deferred until the circuit can admit again: no request, no attempt spent.
func (d *Dispatcher) admit(ctx context.Context, rec outbox.Record) (breaker.Permit, bool) {
	if d.breaker == nil {
		return breaker.Permit{Allowed: true}, true
	}
	p, err := d.breaker.Acquire(ctx, d.db, rec.Destination)
	if err != nil {
		// Without the circuit's state nothing is sent: the circuit may be open. The
		// event goes back to the queue untouched (or its lease expires).
		d.log.WarnContext(ctx, "circuit state unavailable; event released", "event_id", rec.ID, "err", err)
		if err := d.store.Release(ctx, d.db, rec); err != nil {
			d.log.WarnContext(ctx, "release failed; the lease will expire", "event_id", rec.ID, "err", err)
		}
		return p, false
	}
	if p.Allowed {
		return p, true
	}
	out := outbox.Outcome{
		Status:  outbox.StatusPending,
		RetryIn: p.Wait + d.spread(),
		Error:   outbox.ErrorCircuitOpen,
		Label:   "circuit_open",
	}
	if err := d.store.Settle(ctx, d.db, rec, out); err != nil {
		d.log.WarnContext(ctx, "defer failed; the lease will expire", "event_id", rec.ID, "err", err)
		return p, false
	}
	d.observer.Settled(ctx, rec, out)
	return p, false
}

// recordCircuit feeds the outcome to the circuit: a retryable failure that spent the
// budget counts against it, a 429 counts neither way, any other answer resets it.
func (d *Dispatcher) recordCircuit(ctx context.Context, rec outbox.Record, p breaker.Permit, out outbox.Outcome) {
	if d.breaker == nil || (!out.Counted && out.Status == outbox.StatusPending) {
		return
	}
	var tr breaker.Transition
	var err error
	if out.Status == outbox.StatusPending || out.FailedReason == reasonExhausted {
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
	case breaker.ClosedT:
		n, err := d.store.Hasten(ctx, d.db, rec.Destination)
		d.log.InfoContext(ctx, "circuit closed", "destination", rec.Destination, "hastened", n, "err", err)
	}
}

// spread is a small random delay so deferred events do not all come due at once.
func (d *Dispatcher) spread() time.Duration {
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return time.Duration(d.rand.Int64N(int64(time.Second)))
}
