package pager

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

// Alert kinds the kit raises.
const (
	KindDeadLetter   = "dead_letter"
	KindUnauthorized = "unauthorized"
	KindCircuit      = "circuit_"
	KindPendingAge   = "pending_age"
)

// DeliveryObserver returns a delivery.Observer that wakes the sweep of owed pages
// whenever an outcome owes one or a circuit changes, so on-call hears of it at once.
// The pages themselves come from the database (DeliveryDebts), where the dispatcher
// wrote them with the outcome: waking is only a hint, and it never blocks.
func (p *Pager) DeliveryObserver() delivery.Observer { return deliveryObserver{p} }

type deliveryObserver struct{ p *Pager }

func (o deliveryObserver) Settled(_ context.Context, _ outbox.Record, out outbox.Outcome) {
	if out.Page != "" {
		o.p.owe()
	}
}

func (o deliveryObserver) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {
	o.p.owe()
}

// DeliveryDebts is the Debtor of a dispatcher: the pages its settled outcomes owe
// (dead letters, 401/403 answers) and its circuits' unannounced transitions.
func DeliveryDebts(store *outbox.Store, br *breaker.Breaker) Debtor {
	return deliveryDebts{store: store, breaker: br}
}

type deliveryDebts struct {
	store   *outbox.Store
	breaker *breaker.Breaker
}

var circuitTitles = map[breaker.Transition]string{
	breaker.Opened:    "circuit opened: deliveries paused",
	breaker.Reopened:  "circuit re-opened: the probe failed",
	breaker.Recovered: "circuit closed: deliveries resumed",
}

func (d deliveryDebts) TakeOwed(ctx context.Context, tx bun.Tx, limit int) ([]Alert, error) {
	pages, err := d.store.TakeOwedPages(ctx, tx, limit)
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, pg := range pages {
		out = append(out, owedAlert(pg))
	}
	if d.breaker == nil {
		return out, nil
	}
	ann, err := d.breaker.TakeAnnouncements(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, a := range ann {
		if a.Transition == breaker.Recovered && a.Missed > 0 {
			out = append(out, circuitAlert(a.Destination, breaker.Opened)) // it opened unannounced
		}
		out = append(out, circuitAlert(a.Destination, a.Transition))
	}
	return out, nil
}

func owedAlert(pg outbox.OwedPage) Alert {
	a := Alert{EventID: pg.EventID.String(), Aggregate: pg.AggregateKey, Error: describe(pg),
		Detail: "destination " + pg.Destination}
	switch pg.Page {
	case delivery.PageUnauthorized:
		a.Key, a.Kind = KindUnauthorized+":"+pg.Destination, KindUnauthorized
		a.Title = "deliveries refused with HTTP 401/403: check the webhook secret and the clocks"
	default:
		a.Key, a.Kind, a.Title = KindDeadLetter+":"+pg.Destination, KindDeadLetter, "events dead-lettered"
	}
	return a
}

func circuitAlert(dest string, tr breaker.Transition) Alert {
	return Alert{Key: KindCircuit + string(tr) + ":" + dest, Kind: KindCircuit + string(tr),
		Title: circuitTitles[tr], Detail: "destination " + dest}
}

// describe is the last error of an owed page as on-call reads it.
func describe(pg outbox.OwedPage) string {
	s := pg.Error
	if pg.FailedReason != "" {
		s = pg.FailedReason + ": " + s
	}
	if pg.Snippet != "" {
		s += " — " + truncate(pg.Snippet, 200)
	}
	return s
}

// CheckPending pages when the oldest pending event of store is older than maxAge; run
// it on a schedule.
func (p *Pager) CheckPending(ctx context.Context, db bun.IDB, store *outbox.Store, maxAge time.Duration) error {
	d, err := store.Depth(ctx, db)
	if err != nil {
		return err
	}
	if d.Oldest == nil || d.Oldest.Age <= maxAge {
		return nil
	}
	p.Notify(Alert{
		Key: KindPendingAge, Kind: KindPendingAge,
		Title:     fmt.Sprintf("oldest pending event older than %s", maxAge),
		EventID:   d.Oldest.ID.String(),
		Aggregate: d.Oldest.AggregateKey,
		Error:     d.Oldest.LastError,
		Detail:    fmt.Sprintf("it is %s old; %d events pending", d.Oldest.Age.Round(time.Second), d.Pending),
	})
	return nil
}
