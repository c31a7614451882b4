package invoiceapi

import (
	"net/url"
	"strconv"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/cursor"
	"handoff/pkg/integrationkit/problem"
)

// cursorVersion versions the cursor, so its encoding can change without old
// cursors being misread.
const cursorVersion = "v1"

// encodeCursor makes the opaque cursor of the page after the invoice with seq.
func encodeCursor(seq int64) string { return cursor.EncodeSeq(cursorVersion, seq) }

func decodeCursor(s string) (int64, bool) { return cursor.DecodeSeq(s, cursorVersion) }

// filterParams are the query parameters of the list; the route refuses any other.
var filterParams = []string{"status", "customer_id", "customer", "limit", "cursor"}

// parseFilter reads ?status=&customer_id=&limit=&cursor= (customer is customer_id's
// former name, still read). Values that are not even of the right form are refused
// here; the domain checks the rest.
func parseFilter(q url.Values) (invoice.Filter, error) {
	f := invoice.Filter{Status: invoice.Status(q.Get("status")), CustomerID: q.Get("customer_id")}
	var bad []problem.FieldError
	if old := q.Get("customer"); q.Has("customer") {
		if q.Has("customer_id") && old != f.CustomerID {
			bad = append(bad, problem.FieldError{Field: "customer",
				Detail: "is customer_id's former name: give one of them, or both alike"})
		}
		f.CustomerID = old
	}
	if s := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > invoice.MaxLimit {
			bad = append(bad, problem.FieldError{Field: "limit",
				Detail: "must be an integer between 1 and " + strconv.Itoa(invoice.MaxLimit)})
		}
		f.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		seq, ok := decodeCursor(s)
		if !ok {
			bad = append(bad, problem.FieldError{Field: "cursor", Detail: "is not a cursor of this list"})
		}
		f.BeforeSeq = seq
	}
	if len(bad) > 0 {
		return invoice.Filter{}, problem.Invalid("the query is not valid", bad...)
	}
	return f, nil
}
