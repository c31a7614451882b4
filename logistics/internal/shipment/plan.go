package shipment

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Outcome is what ApplyEvents did with one event.
type Outcome struct {
	// Result is set when Err is nil.
	Result Result
	// Err is ErrNotYetApplicable when the event needs a shipment that does not exist
	// yet; the event changed nothing then.
	Err error
}

// plan is the effect of a list of events on the shipments they name, computed in
// memory from the shipments' locked rows, to be written with one statement per table.
type plan struct {
	outcomes []Outcome  // by event index
	created  []Shipment // new shipments, in their final state, in creation order
	updated  []Shipment // existing shipments the events changed, in their final state
	history  []change   // one row per applied event, in the order applied
	touched  []*tracked // every shipment created or changed, in first-touch order
	byInv    map[uuid.UUID]*tracked
}

// tracked is one invoice's shipment as the plan moves it.
type tracked struct {
	sh      Shipment
	created bool // not in the database yet
	changed bool
}

// invoiceIDs returns the distinct invoices of evs.
func invoiceIDs(evs []Event) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(evs))
	for _, ev := range evs {
		ids = append(ids, ev.InvoiceID)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}

// planEvents decides evs against current, the existing shipments of their invoices.
// Events of one invoice apply in sequence order (ties in the order given), each
// against the state the previous ones left, exactly as if each had come alone.
func planEvents(current []Shipment, evs []Event) (plan, error) {
	p := plan{outcomes: make([]Outcome, len(evs)), byInv: make(map[uuid.UUID]*tracked, len(current))}
	for _, s := range current {
		p.byInv[s.InvoiceID] = &tracked{sh: s}
	}
	order := make([]int, len(evs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(evs[a].Sequence, evs[b].Sequence) })
	for _, i := range order {
		out, err := p.apply(evs[i])
		if err != nil {
			return plan{}, err
		}
		p.outcomes[i] = out
	}
	for _, t := range p.touched {
		switch {
		case t.created:
			p.created = append(p.created, t.sh)
		case t.changed:
			p.updated = append(p.updated, t.sh)
		}
	}
	return p, nil
}

// apply decides one event and moves its invoice's tracked shipment.
func (p *plan) apply(ev Event) (Outcome, error) {
	t := p.byInv[ev.InvoiceID]
	var cur *Shipment
	if t != nil {
		cur = &t.sh
	}
	d, err := decide(cur, ev)
	if err != nil {
		return Outcome{Err: err}, nil
	}
	if t == nil {
		id, err := uuid.NewV7()
		if err != nil {
			return Outcome{}, fmt.Errorf("new shipment id: %w", err)
		}
		t = &tracked{created: true, sh: Shipment{
			ID: id, InvoiceID: ev.InvoiceID, InvoiceNumber: ev.InvoiceNumber, CustomerID: ev.CustomerID,
			State: d.to, Version: 1, LastEventSeq: ev.Sequence,
		}}
		p.byInv[ev.InvoiceID] = t
		p.touched = append(p.touched, t)
		p.record(t, "", ev)
		return Outcome{Result: d.result}, nil
	}
	if d.result == ResultStale {
		return Outcome{Result: d.result}, nil
	}
	if !t.changed && !t.created {
		t.changed = true
		p.touched = append(p.touched, t)
	}
	t.sh.LastEventSeq = ev.Sequence
	if d.result == ResultApplied {
		from := t.sh.State
		t.sh.State, t.sh.Version = d.to, t.sh.Version+1
		p.record(t, from, ev)
	}
	return Outcome{Result: d.result}, nil
}

// record adds the history row of ev having moved t from state from.
func (p *plan) record(t *tracked, from State, ev Event) {
	p.history = append(p.history, change{shipmentID: t.sh.ID, Change: Change{
		From: from, To: t.sh.State, Version: t.sh.Version, Cause: string(ev.Type), IdempotencyKey: ev.IdempotencyKey,
	}})
}
