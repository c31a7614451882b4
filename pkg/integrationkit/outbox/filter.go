package outbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/cursor"
)

// Page sizes of List and batch sizes of RetryMatching and SkipMatching.
const (
	DefaultListLimit  = 50
	MaxListLimit      = 500
	DefaultRetryLimit = 1000
	MaxRetryLimit     = 10000
)

// Filter selects events for List, RetryMatching and SkipMatching. Zero fields select
// everything.
type Filter struct {
	// Status is pending, delivered, failed or skipped.
	Status string
	// Type is the exact event type.
	Type string
	// AggregateKey selects one aggregate's events.
	AggregateKey string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound created_at.
	CreatedFrom, CreatedTo time.Time
	// Limit is the page size of List (default DefaultListLimit, at most MaxListLimit)
	// or the most events RetryMatching or SkipMatching changes (default
	// DefaultRetryLimit, at most MaxRetryLimit).
	Limit int
	// After continues a List after the last event of the previous page.
	After *Cursor
}

// FilterError names the field of a Filter that is invalid; nothing was read or written.
type FilterError struct {
	Field  string
	Detail string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("outbox: invalid filter %s: %s", e.Field, e.Detail)
}

// ValidStatus reports whether s is a delivery_status value.
func ValidStatus(s string) bool {
	return s == StatusPending || s == StatusDelivered || s == StatusFailed || s == StatusSkipped
}

// normalize checks f and fills in the default limit; max bounds Limit.
func (f *Filter) normalize(def, max int) error {
	switch {
	case f.Status != "" && !ValidStatus(f.Status):
		return &FilterError{Field: "status", Detail: "must be pending, delivered, failed or skipped"}
	case f.Limit < 0 || f.Limit > max:
		return &FilterError{Field: "limit", Detail: fmt.Sprintf("must be between 1 and %d", max)}
	case !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && !f.CreatedFrom.Before(f.CreatedTo):
		return &FilterError{Field: "to", Detail: "must be after from"}
	case !storable(f.Type):
		return &FilterError{Field: "type", Detail: "must be valid UTF-8 without NUL"}
	case !storable(f.AggregateKey):
		return &FilterError{Field: "aggregate key", Detail: "must be valid UTF-8 without NUL"}
	}
	if f.Limit == 0 {
		f.Limit = def
	}
	return nil
}

// apply adds f's conditions (not its limit or cursor) to q.
func (f Filter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Status != "" {
		q = q.Where("delivery_status = ?", f.Status)
	}
	if f.Type != "" {
		q = q.Where("event_type = ?", f.Type)
	}
	if f.AggregateKey != "" {
		q = q.Where("aggregate_key = ?", f.AggregateKey)
	}
	if !f.CreatedFrom.IsZero() {
		q = q.Where("created_at >= ?", f.CreatedFrom)
	}
	if !f.CreatedTo.IsZero() {
		q = q.Where("created_at < ?", f.CreatedTo)
	}
	return q
}

// Cursor is a position in List's order (newest first): the page after it holds the
// events created before CreatedAt, or at CreatedAt with a smaller ID.
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// cursorVersion versions the encoding, so it can change without misreading old cursors.
const cursorVersion = "o1"

// String encodes c as an opaque URL-safe token.
func (c Cursor) String() string {
	return cursor.Encode(cursorVersion, strconv.FormatInt(c.CreatedAt.UnixMicro(), 10), c.ID.String())
}

// ParseCursor decodes a token made by Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	bad := &FilterError{Field: "cursor", Detail: "is not a cursor of this list"}
	fields, ok := cursor.Decode(s, cursorVersion, 2)
	if !ok {
		return Cursor{}, bad
	}
	us, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return Cursor{}, bad
	}
	uid, err := uuid.Parse(fields[1])
	if err != nil {
		return Cursor{}, bad
	}
	return Cursor{CreatedAt: time.UnixMicro(us).UTC(), ID: uid}, nil
}

// storable reports whether PostgreSQL takes s as text: valid UTF-8 without NUL.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
