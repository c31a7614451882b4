package shipment

import "time"

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
