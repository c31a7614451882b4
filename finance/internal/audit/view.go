package audit

import (
	"time"

	"github.com/google/uuid"
)

// View is an entry as finance writes it in JSON, the same in the ops API's answers
// and in the CLI's --json output: every time in UTC, the filter and the destination
// left out where the action has none.
type View struct {
	ID          int64      `json:"id"`
	At          time.Time  `json:"at"`
	Actor       string     `json:"actor"`
	Action      string     `json:"action"`
	Reason      string     `json:"reason"`
	EventID     *uuid.UUID `json:"event_id"`
	InvoiceID   *uuid.UUID `json:"invoice_id"`
	Count       int        `json:"count"`
	Filter      *Filter    `json:"filter,omitempty"`
	Destination string     `json:"destination,omitempty"`
}

// Views returns entries as Views, in their order; never nil, so an empty list is
// written as [].
func Views(entries []Entry) []View {
	out := make([]View, len(entries))
	for i, e := range entries {
		out[i] = View{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Action: e.Action, Reason: e.Reason,
			EventID: e.EventID, InvoiceID: e.InvoiceID, Count: e.Count, Destination: e.Destination}
		if e.Filter != nil {
			f := e.Filter.inUTC()
			out[i].Filter = &f
		}
	}
	return out
}

// inUTC is a copy of f with its times in UTC (f itself is left as it is).
func (f Filter) inUTC() Filter {
	if f.From != nil {
		t := f.From.UTC()
		f.From = &t
	}
	if f.To != nil {
		t := f.To.UTC()
		f.To = &t
	}
	return f
}
