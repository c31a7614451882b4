package delivery

import (
	"context"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// Observers tells every observer in turn (e.g. the pager and the metrics).
type Observers []Observer

// Settled tells each observer.
func (os Observers) Settled(ctx context.Context, rec outbox.Record, out outbox.Outcome) {
	for _, o := range os {
		o.Settled(ctx, rec, out)
	}
}

// CircuitChanged tells each observer.
func (os Observers) CircuitChanged(ctx context.Context, destination string, tr breaker.Transition, rec outbox.Record) {
	for _, o := range os {
		o.CircuitChanged(ctx, destination, tr, rec)
	}
}
