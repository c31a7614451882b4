package pager

import (
	"context"
	"fmt"
	"net/http"
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

// DeliveryObserver returns a delivery.Observer that pages on dead letters, on 401 or
// 403 answers (a secret or clock problem on-call can fix) and on circuit changes. It
// only calls Notify, so it never blocks the dispatcher.
func (p *Pager) DeliveryObserver() delivery.Observer { return deliveryObserver{p} }

type deliveryObserver struct{ p *Pager }

func (o deliveryObserver) Settled(_ context.Context, rec outbox.Record, out outbox.Outcome) {
	base := Alert{EventID: rec.ID.String(), Aggregate: rec.AggregateKey, Error: describe(out),
		Detail: "destination " + rec.Destination}
	if out.Status == outbox.StatusFailed {
		a := base
		a.Key, a.Kind, a.Title = KindDeadLetter+":"+rec.Destination, KindDeadLetter, "events dead-lettered"
		o.p.Notify(a)
	}
	if out.StatusCode == http.StatusUnauthorized || out.StatusCode == http.StatusForbidden {
		a := base
		a.Key, a.Kind = KindUnauthorized+":"+rec.Destination, KindUnauthorized
		a.Title = "deliveries refused with HTTP 401/403: check the webhook secret and the clocks"
		o.p.Notify(a)
	}
}

func (o deliveryObserver) CircuitChanged(_ context.Context, destination string, tr breaker.Transition, rec outbox.Record) {
	titles := map[breaker.Transition]string{
		breaker.Opened:   "circuit opened: deliveries paused",
		breaker.Reopened: "circuit re-opened: the probe failed",
		breaker.ClosedT:  "circuit closed: deliveries resumed",
	}
	o.p.Notify(Alert{
		Key: KindCircuit + string(tr) + ":" + destination, Kind: KindCircuit + string(tr),
		Title: titles[tr], EventID: rec.ID.String(), Aggregate: rec.AggregateKey,
		Detail: "destination " + destination,
	})
}

// describe is the last error of an outcome as on-call reads it.
func describe(out outbox.Outcome) string {
	s := out.Error
	if out.FailedReason != "" {
		s = out.FailedReason + ": " + s
	}
	if out.Snippet != "" {
		s += " — " + truncate(out.Snippet, 200)
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
