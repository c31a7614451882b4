package opsapi

import (
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/problem"

	"handoff/logistics/internal/processedevents"
)

// queryParams are the query parameters of the list; the route refuses any other.
var queryParams = []string{"invoice_id", "from", "to", "limit", "cursor"}

// parseQuery reads invoice_id, from, to (RFC 3339), limit and cursor; every bad value
// is reported at once.
func parseQuery(q url.Values) (processedevents.Filter, error) {
	var f processedevents.Filter
	var bad []problem.FieldError
	field := func(name, detail string) { bad = append(bad, problem.FieldError{Field: name, Detail: detail}) }
	if s := q.Get("invoice_id"); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			field("invoice_id", "must be a UUID")
		}
		f.InvoiceID = id
	}
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if s := q.Get(b.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				field(b.name, "must be an RFC 3339 time such as 2030-01-02T03:04:05Z")
			}
			*b.dst = t
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > processedevents.MaxLimit {
			field("limit", "must be an integer from 1 to "+strconv.Itoa(processedevents.MaxLimit))
		}
		f.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, err := processedevents.ParseCursor(s)
		if err != nil {
			field("cursor", "is not a cursor this API returned")
		}
		f.After = &c
	}
	if len(bad) > 0 {
		return processedevents.Filter{}, problem.Invalid("the query is invalid", bad...)
	}
	return f, nil
}
