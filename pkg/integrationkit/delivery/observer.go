package delivery

import (
	"context"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// Observer is told what the dispatcher did, after it is committed: pagers and metrics
// implement it. Calls come from delivery goroutines and must not block: an observer
// that does I/O queues the work and returns.
type Observer interface {
	// Settled reports one settled attempt or deferral of rec.
	Settled(ctx context.Context, rec outbox.Record, out outbox.Outcome)
	// CircuitChanged reports a circuit transition caused by rec's outcome.
	CircuitChanged(ctx context.Context, destination string, tr breaker.Transition, rec outbox.Record)
}

type noObserver struct{}

func (noObserver) Settled(context.Context, outbox.Record, outbox.Outcome) {}
func (noObserver) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {
}
