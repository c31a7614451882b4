// Package shipment is the logistics domain: the shipment state machine driven by
// finance's invoice events and by the warehouse, with optimistic locking and a history
// row for every change. Its store holds the SQL; callers never build queries.
package shipment

import (
	"time"

	"github.com/google/uuid"
)

// State is where a shipment is in its life.
type State string

// States of a shipment.
const (
	AwaitingPayment State = "awaiting_payment"
	Waiting         State = "waiting"
	Picking         State = "picking"
	Packed          State = "packed"
	Shipped         State = "shipped"
	Delivered       State = "delivered"
	Cancelled       State = "cancelled"
	ReturnPending   State = "return_pending"
)

// states lists every state in life-cycle order.
var states = []State{AwaitingPayment, Waiting, Picking, Packed, Shipped, Delivered, Cancelled, ReturnPending}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, v := range states {
		if s == v {
			return true
		}
	}
	return false
}

// warehouseMoves maps each state the warehouse may set to the one state it may
// follow. Every other move (and every event-driven state) is refused.
var warehouseMoves = map[State]State{
	Picking:   Waiting,
	Packed:    Picking,
	Shipped:   Packed,
	Delivered: Shipped,
}

// CanMove reports whether the warehouse may move a shipment from one state to another.
func CanMove(from, to State) bool {
	want, ok := warehouseMoves[to]
	return ok && want == from
}

// Shipment is the logistics side of one invoice.
type Shipment struct {
	ID            uuid.UUID
	Seq           int64 // creation order, the key of list pagination
	InvoiceID     uuid.UUID
	InvoiceNumber string
	CustomerID    string
	State         State
	// Version increments on every state change; the warehouse names it to move the
	// shipment, so a move decided on an outdated view is refused.
	Version int64
	// LastEventSeq is the highest invoice event sequence applied; older events are stale.
	LastEventSeq int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Change is one row of a shipment's history.
type Change struct {
	From           State // empty when the change created the shipment
	To             State
	Version        int64 // the version the change produced
	Cause          string
	IdempotencyKey string // the event's key; empty for warehouse moves
	At             time.Time
}

// CauseWarehouse is the cause recorded for moves made through the warehouse API.
const CauseWarehouse = "warehouse"

// Detail is a shipment with its history, oldest change first.
type Detail struct {
	Shipment
	History []Change
}
