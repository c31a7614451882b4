package shipment

import (
	"time"

	"github.com/google/uuid"
)

// View is a shipment as logistics' APIs write it in JSON, the same in the warehouse's
// answers and on-call's (each adds what it shows besides). Times are in UTC.
type View struct {
	ID            uuid.UUID `json:"id"`
	InvoiceID     uuid.UUID `json:"invoice_id"`
	InvoiceNumber string    `json:"invoice_number"`
	CustomerID    string    `json:"customer_id"`
	State         string    `json:"state"`
	Version       int64     `json:"version"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// ViewOf is s as a View.
func ViewOf(s Shipment) View {
	return View{ID: s.ID, InvoiceID: s.InvoiceID, InvoiceNumber: s.InvoiceNumber, CustomerID: s.CustomerID,
		State: string(s.State), Version: s.Version, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
}

// ChangeView is a change as logistics' APIs write it in JSON (the warehouse's and
// on-call's answers alike): the time in UTC, from_state null for the change that
// created the shipment, the key left out for a warehouse move.
type ChangeView struct {
	From           *string   `json:"from_state"`
	To             string    `json:"to_state"`
	Version        int64     `json:"version"`
	Cause          string    `json:"cause"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	At             time.Time `json:"at"`
}

// HistoryView is history as ChangeViews, in its order; never nil, so an empty
// history is written as [].
func HistoryView(history []Change) []ChangeView {
	out := make([]ChangeView, len(history))
	for i, c := range history {
		out[i] = ChangeView{To: string(c.To), Version: c.Version, Cause: c.Cause,
			IdempotencyKey: c.IdempotencyKey, At: c.At.UTC()}
		if c.From != "" {
			from := string(c.From)
			out[i].From = &from
		}
	}
	return out
}
