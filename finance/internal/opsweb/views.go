package opsweb

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/insight"
	"handoff/pkg/integrationkit/outbox"
)

// eventRow is an event as a list shows it: with its invoice's number and, when a
// failed earlier event of its invoice holds it back, that event (insight.Row).
type eventRow struct {
	insight.Row
}

// CanRetry reports whether a Retry would do something now: the event is pending or
// failed (neither delivered nor skipped), no dispatcher holds it, no failed event of
// its invoice holds it back, and neither an open circuit nor a pause holds it (a
// replay would only make it wait there again).
func (r eventRow) CanRetry() bool {
	return (r.Status == outbox.StatusPending || r.Status == outbox.StatusFailed) && !r.InFlight &&
		r.WaitingFor == nil && !r.Deferred() && !r.Paused()
}

// CanResend reports whether a Resend would do something: the event is delivered.
func (r eventRow) CanResend() bool { return r.Status == outbox.StatusDelivered }

// can reports whether action (retry, skip, resend) applies to the event now.
func (r eventRow) can(action string) bool {
	switch action {
	case audit.Retry:
		return r.CanRetry()
	case audit.Skip:
		return r.CanSkip()
	case audit.Resend:
		return r.CanResend()
	}
	return false
}

// CanSkip reports whether a Skip would do something now: the event is a dead letter.
func (r eventRow) CanSkip() bool {
	return r.Status == outbox.StatusFailed && !r.InFlight
}

// Deferred reports whether the event waits for its destination's circuit to admit it.
func (r eventRow) Deferred() bool {
	return r.Status == outbox.StatusPending && r.DeferredAt != nil && r.DeferredBy == outbox.DeferredByCircuit
}

// Paused reports whether the event waits for an operator to resume its destination.
func (r eventRow) Paused() bool {
	return r.Status == outbox.StatusPending && r.DeferredAt != nil && r.DeferredBy == outbox.DeferredByPause
}

// eventRows looks up the invoice numbers of events and the failed events holding the
// pending ones back, in one query each.
func (d *Dashboard) eventRows(ctx context.Context, events []outbox.StoredEvent) ([]eventRow, error) {
	rows, err := d.cfg.Insight.Rows(ctx, events)
	if err != nil {
		return nil, err
	}
	out := make([]eventRow, len(rows))
	for i, r := range rows {
		out[i] = eventRow{Row: r}
	}
	return out, nil
}

// compact returns keys sorted without repeats.
func compact(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}

func invoiceLabel(numbers map[string]string, key string) string {
	if n, ok := numbers[key]; ok {
		return n
	}
	return key
}

// alertRow is a row of the alerts panel.
type alertRow struct {
	insight.Alert
	// Event is the latest occurrence's event, when it names one.
	Event *uuid.UUID
	// Invoice is the latest occurrence's invoice number (or aggregate key), if any.
	Invoice string
}

func (d *Dashboard) alertRows(ctx context.Context) ([]alertRow, error) {
	alerts, err := d.cfg.Insight.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, a := range alerts {
		if a.Aggregate != "" {
			keys = append(keys, a.Aggregate)
		}
	}
	numbers, err := d.cfg.Insight.InvoiceNumbers(ctx, compact(keys))
	if err != nil {
		return nil, err
	}
	rows := make([]alertRow, len(alerts))
	for i, a := range alerts {
		rows[i] = alertRow{Alert: a}
		if id, err := uuid.Parse(a.EventID); err == nil {
			rows[i].Event = &id
		}
		if a.Aggregate != "" {
			rows[i].Invoice = invoiceLabel(numbers, a.Aggregate)
		}
	}
	return rows, nil
}
