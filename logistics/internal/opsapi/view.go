package opsapi

import (
	"time"

	"github.com/google/uuid"

	"handoff/logistics/internal/processedevents"
	"handoff/logistics/internal/shipment"
)

// The response shapes; field names are the contract finance's client reads.

type processedView struct {
	IdempotencyKey string     `json:"idempotency_key"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	InvoiceID      *uuid.UUID `json:"invoice_id"`
	Result         string     `json:"result"`
	ReceivedAt     time.Time  `json:"received_at"`
}

type listView struct {
	Items      []processedView `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
	// Shipment is the invoice's shipment when the query named an invoice that has one.
	Shipment *shipmentView `json:"shipment,omitempty"`
}

type shipmentView struct {
	shipment.View
	LastEventSeq int64                 `json:"last_event_seq"`
	History      []shipment.ChangeView `json:"history"`
}

func newListView(p processedevents.Page) listView {
	out := listView{Items: make([]processedView, len(p.Items))}
	for i, ev := range p.Items {
		out.Items[i] = processedView{IdempotencyKey: ev.IdempotencyKey, EventID: ev.EventID,
			EventType: ev.EventType, Result: ev.Result, ReceivedAt: ev.ReceivedAt.UTC()}
		if ev.InvoiceID != uuid.Nil {
			id := ev.InvoiceID
			out.Items[i].InvoiceID = &id
		}
	}
	if p.Next != nil {
		out.NextCursor = p.Next.String()
	}
	return out
}

func newShipmentView(d shipment.Detail) shipmentView {
	return shipmentView{View: shipment.ViewOf(d.Shipment), LastEventSeq: d.LastEventSeq,
		History: shipment.HistoryView(d.History)}
}
