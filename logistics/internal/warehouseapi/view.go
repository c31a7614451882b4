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
	History []shipment.ChangeView `json:"history"`
}

type listView struct {
	Items      []shipmentView `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func viewOf(s shipment.Shipment) shipmentView {
	return shipmentView{
		ID: s.ID, InvoiceID: s.InvoiceID, InvoiceNumber: s.InvoiceNumber, CustomerID: s.CustomerID,
		State: string(s.State), Version: s.Version, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
	}
}

func detailOf(d shipment.Detail) detailView {
	return detailView{shipmentView: viewOf(d.Shipment), History: shipment.HistoryView(d.History)}
}
