package logisticsclient

import (
	"time"

	"github.com/google/uuid"
)

// Page is one page of logistics' processed-events record, oldest first.
type Page struct {
	Items []ProcessedEvent `json:"items"`
	// NextCursor, when not empty, continues the list.
	NextCursor string `json:"next_cursor"`
	// Shipment is the invoice's shipment when the query named an invoice that has one.
	Shipment *Shipment `json:"shipment"`
}

// ProcessedEvent is one idempotency key logistics applied (or recorded as stale).
type ProcessedEvent struct {
	IdempotencyKey string     `json:"idempotency_key"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	InvoiceID      *uuid.UUID `json:"invoice_id"`
	Result         string     `json:"result"`
	ReceivedAt     time.Time  `json:"received_at"`
}

// Shipment is an invoice's shipment on the logistics side.
type Shipment struct {
	ID            uuid.UUID `json:"id"`
	InvoiceID     uuid.UUID `json:"invoice_id"`
	InvoiceNumber string    `json:"invoice_number"`
	State         string    `json:"state"`
	Version       int64     `json:"version"`
	LastEventSeq  int64     `json:"last_event_seq"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	History       []Change  `json:"history"`
}

// Change is one step of a shipment's history.
type Change struct {
	// From is empty for the change that created the shipment.
	From           string    `json:"from_state"`
	To             string    `json:"to_state"`
	Version        int64     `json:"version"`
	Cause          string    `json:"cause"`
	IdempotencyKey string    `json:"idempotency_key"`
	At             time.Time `json:"at"`
}
