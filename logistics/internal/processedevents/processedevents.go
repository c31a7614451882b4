// Package processedevents reads logistics' record of the finance events it processed
// (the inbox table the webhook writes): for operators tracing an invoice, and for
// finance's reconciliation, which walks the record by receipt time.
package processedevents

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/cursor"
)

// Page sizes of List.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Event is one processed idempotency key.
type Event struct {
	IdempotencyKey string
	EventID        string
	EventType      string
	// InvoiceID is uuid.Nil for an event that named no invoice.
	InvoiceID uuid.UUID
	// Result is what applying the event did: applied or stale.
	Result     string
	ReceivedAt time.Time
}

// Filter selects processed events; zero fields select everything.
type Filter struct {
	InvoiceID uuid.UUID
	// From (inclusive) and To (exclusive) bound received_at.
	From, To time.Time
	// Limit is the page size, 1 to MaxLimit; 0 means DefaultLimit.
	Limit int
	// After continues a list after the last event of the previous page.
	After *Cursor
}

// Page is one page of List, oldest first; Next, when not nil, continues it.
type Page struct {
	Items []Event
	Next  *Cursor
}

// FilterError names the invalid field of a Filter.
type FilterError struct {
	Field, Detail string
}

func (e *FilterError) Error() string { return "invalid " + e.Field + ": " + e.Detail }

func (f *Filter) normalize() error {
	switch {
	case f.Limit < 0 || f.Limit > MaxLimit:
		return &FilterError{Field: "limit", Detail: fmt.Sprintf("must be between 1 and %d", MaxLimit)}
	case !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To):
		return &FilterError{Field: "to", Detail: "must be after from"}
	}
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	return nil
}

// Cursor is a position in List's order: by receipt time, then key.
type Cursor struct {
	ReceivedAt time.Time
	Key        string
}

// cursorVersion versions the encoding, so it can change without misreading old cursors.
const cursorVersion = "p1"

// String encodes c as an opaque URL-safe token.
func (c Cursor) String() string {
	return cursor.Encode(cursorVersion, strconv.FormatInt(c.ReceivedAt.UnixMicro(), 10), c.Key)
}

// ParseCursor decodes a token made by Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	fields, ok := cursor.Decode(s, cursorVersion, 2)
	if !ok {
		return Cursor{}, errors.New("not a cursor of this list")
	}
	us, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return Cursor{}, errors.New("not a cursor of this list")
	}
	return Cursor{ReceivedAt: time.UnixMicro(us).UTC(), Key: fields[1]}, nil
}
