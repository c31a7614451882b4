// Package audit is the log of what finance's operators did to the outbox: every
// retry, skip, resend, retarget, pause and resume, with who asked, when, why and how
// many events it changed. An entry is written in the transaction of the change it
// records, so the log holds exactly the changes that happened; it is never pruned.
package audit

import (
	"errors"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/cursor"
)

// The actions an entry records.
const (
	Retry    = "retry"
	Skip     = "skip"
	Resend   = "resend"
	Retarget = "retarget"
	Pause    = "pause"
	Resume   = "resume"
)

// Page sizes of List.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Entry is one operator action.
type Entry struct {
	ID int64
	// At is when the action's transaction began, by the database's clock.
	At time.Time
	// Actor names who asked: the principal of an ops token, or cli:<user>.
	Actor  string
	Action string
	Reason string
	// Count is how many events the action changed (a pause changes none).
	Count int
	// EventID is the event of an action on one event; nil for the others.
	EventID *uuid.UUID
	// InvoiceID is that event's invoice, or the invoice an action's filter named.
	InvoiceID *uuid.UUID
	// Filter is the filter of an action by filter, and of a retarget; nil otherwise.
	Filter *Filter
	// Destination is the destination paused or resumed, or where a retarget moved
	// events to.
	Destination string
}

// Filter is how an action by filter selected its events, as applied.
type Filter struct {
	Status    string     `json:"status,omitempty"`
	Type      string     `json:"type,omitempty"`
	InvoiceID string     `json:"invoice_id,omitempty"`
	From      *time.Time `json:"from,omitempty"`
	To        *time.Time `json:"to,omitempty"`
	Limit     int        `json:"limit,omitempty"`
	// Destination selects the events addressed to it (a retarget's old destination).
	Destination string `json:"destination,omitempty"`
}

// Event names one event an action changed.
type Event struct {
	ID        uuid.UUID `json:"event_id"`
	InvoiceID uuid.UUID `json:"invoice_id"`
}

// Query selects entries for List; zero fields select everything.
type Query struct {
	// EventID selects the actions that changed this event.
	EventID *uuid.UUID
	// InvoiceID selects the actions that changed an event of this invoice, or whose
	// filter named it.
	InvoiceID *uuid.UUID
	// Limit is the page size (default DefaultLimit); the caller keeps it within MaxLimit.
	Limit int
	// After continues a List after the last entry of the previous page.
	After *Cursor
}

// Page is one page of List, newest first; Next, when not nil, continues it.
type Page struct {
	Items []Entry
	Next  *Cursor
}

// Cursor is a position in List's order: the page after it holds older entries.
type Cursor struct {
	ID int64
}

// cursorVersion versions the encoding, so it can change without misreading old cursors.
const cursorVersion = "a1"

// String encodes c as an opaque URL-safe token.
func (c Cursor) String() string { return cursor.EncodeSeq(cursorVersion, c.ID) }

// ErrBadCursor means a token is not a cursor of the audit log.
var ErrBadCursor = errors.New("audit: not a cursor of this list")

// ParseCursor decodes a token made by Cursor.String, or returns ErrBadCursor.
func ParseCursor(s string) (Cursor, error) {
	id, ok := cursor.DecodeSeq(s, cursorVersion)
	if !ok {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{ID: id}, nil
}
