package warehouseapi

import (
	"time"

	"github.com/google/uuid"

	"handoff/logistics/internal/shipment"
)

// shipmentView is a shipment as the API shows it.
type shipmentView struct {
	ID            uuid.UUID `json:"id"`
	InvoiceID     uuid.UUID `json:"invoice_id"`
	InvoiceNumber string    `json:"invoice_number"`
	CustomerID    string    `json:"customer_id"`
	State         string    `json:"state"`
	Version       int64     `json:"version"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

type detailView struct {
	shipmentView
	History []changeView `json:"history"`
}

type changeView struct {
	From           *string   `json:"from_state"` // null when the change created the shipment
	To             string    `json:"to_state"`
	Version        int64     `json:"version"`
	Cause          string    `json:"cause"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	At             time.Time `json:"at"`
}

type listView struct {
	Items      []shipmentView `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func viewOf(s shipment.Shipment) shipmentView {
	return shipmentView{
		ID: s.ID, InvoiceID: s.InvoiceID, InvoiceNumber: s.InvoiceNumber, CustomerID: s.CustomerID,
		State: string(s.State), Version: s.Version, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
}

func detailOf(d shipment.Detail) detailView {
	out := detailView{shipmentView: viewOf(d.Shipment), History: make([]changeView, 0, len(d.History))}
	for _, c := range d.History {
		v := changeView{To: string(c.To), Version: c.Version, Cause: c.Cause, IdempotencyKey: c.IdempotencyKey, At: c.At}
		if c.From != "" {
			from := string(c.From)
			v.From = &from
		}
		out.History = append(out.History, v)
	}
	return out
}
