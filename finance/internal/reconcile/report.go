// Package reconcile compares, for a time window, the events finance marked delivered
// with the events logistics says it processed, and finds what the webhook contract
// alone cannot show: an event delivered but never applied, an event applied but
// unknown to finance, and an event pending far past its schedule. An event an operator
// skipped is resolved: counted as such, never as a discrepancy.
//
// A Reconciler reads finance's side from its own database and logistics' side through
// logistics' ops API (GET /v1/ops/processed-events), stores every result in
// finance_reconciliations and pages on any discrepancy. Latest reads the newest result
// for the dashboard.
package reconcile

import (
	"time"
)

// MaxListed bounds how many discrepancies of each kind a report lists; the counts are
// always complete.
const MaxListed = 100

// Discrepancy is one event the two services disagree about.
type Discrepancy struct {
	IdempotencyKey string    `json:"idempotency_key"`
	EventID        string    `json:"event_id,omitempty"`
	InvoiceID      string    `json:"invoice_id,omitempty"`
	At             time.Time `json:"at"`
	Detail         string    `json:"detail,omitempty"`
}

// Report is the result of one reconciliation of the window [From, To).
type Report struct {
	ID         int64
	StartedAt  time.Time
	FinishedAt time.Time
	From, To   time.Time
	// Delivered counts the keys finance marked delivered in the window, Processed the
	// keys logistics processed in it.
	Delivered int
	Processed int
	// Skipped counts the events operators skipped in the window: given up on purpose,
	// so logistics is not expected to have them.
	Skipped int
	// Missing were delivered but never applied by logistics; Unknown were applied by
	// logistics but finance has no such event; Overdue are pending far past their
	// next attempt. Each lists at most MaxListed; the counts are complete.
	Missing, Unknown, Overdue                []Discrepancy
	MissingCount, UnknownCount, OverdueCount int
	// Error, when not empty, says why the run could not finish; the counts are then
	// not meaningful.
	Error string
}

// Discrepancies is the total number of disagreements found.
func (r Report) Discrepancies() int { return r.MissingCount + r.UnknownCount + r.OverdueCount }

// OK reports a finished run with nothing to look at.
func (r Report) OK() bool { return r.Error == "" && r.Discrepancies() == 0 }

func listed(all []Discrepancy) []Discrepancy {
	if len(all) > MaxListed {
		return all[:MaxListed]
	}
	return all
}
