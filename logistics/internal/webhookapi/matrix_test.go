package webhookapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/logistics/internal/shipment"
)

// A duplicated JSON key is read as its last value, the same way for the event that is
// applied and for the fingerprint that detects a reused key: a retry without the
// duplicate is a duplicate, and one whose last value differs is a reused key.
func TestDuplicateJSONKeysReadAsTheLastValue(t *testing.T) {
	t.Parallel()
	h := setup(t)
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	plain := marshal(t, env)
	doubled := bytes.Replace(plain, []byte(`"total_minor":12000`), []byte(`"total_minor":99,"total_minor":12000`), 1)
	require.NotEqual(t, plain, doubled)

	requireOK(t, do(t, h.request(t, keyOf(env), doubled)), applied)
	requireOK(t, do(t, h.request(t, keyOf(env), plain)), duplicate)
	otherLast := bytes.Replace(plain, []byte(`"total_minor":12000`), []byte(`"total_minor":12000,"total_minor":99`), 1)
	requireProblem(t, do(t, h.request(t, keyOf(env), otherLast)), http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
}

// Nesting is bounded by the 1 MiB body and by encoding/json's 10,000 levels: 100
// levels inside an event are accepted, 10,001 are a 400 that stores nothing.
func TestDeepNestingIsBounded(t *testing.T) {
	t.Parallel()
	h := setup(t)
	nested := func(depth int) []byte {
		env := envelope(shipment.InvoicePaid, uuid.New(), 2)
		raw := marshal(t, env)
		note := `"note":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `,`
		return bytes.Replace(raw, []byte(`"currency"`), []byte(note+`"currency"`), 1)
	}
	requireOK(t, do(t, h.request(t, "invoice.paid:deep-100", nested(100))), applied)
	r := do(t, h.request(t, "invoice.paid:deep-10001", nested(10_001)))
	requireProblem(t, r, http.StatusBadRequest, "malformed-event")
	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
}

// A lone UTF-16 surrogate escape, which encoding/json decodes as U+FFFD, leaves valid
// text: the event is applied, and is never a database error or a 500.
func TestLoneSurrogateIsNeverAServerError(t *testing.T) {
	t.Parallel()
	h := setup(t)
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	raw := bytes.Replace(marshal(t, env), []byte(`"cust-42"`), []byte(`"cust-\ud800"`), 1)
	requireOK(t, do(t, h.request(t, keyOf(env), raw)), applied)
	requireOK(t, do(t, h.request(t, keyOf(env), raw)), duplicate)
	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
}
