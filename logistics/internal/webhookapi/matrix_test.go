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

// A duplicated JSON member, in the envelope or in its data, is a 400 that stores
// nothing, so the sender's corrected delivery under the same key still applies.
func TestDuplicateJSONMembersAre400(t *testing.T) {
	t.Parallel()
	h := setup(t)
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	plain := marshal(t, env)
	for _, doubled := range [][]byte{
		bytes.Replace(plain, []byte(`"total_minor":12000`), []byte(`"total_minor":99,"total_minor":12000`), 1),
		bytes.Replace(plain, []byte(`"sequence":2`), []byte(`"sequence":2,"sequence":2`), 1),
	} {
		require.NotEqual(t, plain, doubled)
		requireProblem(t, do(t, h.request(t, keyOf(env), doubled)), http.StatusBadRequest, "malformed-event")
	}
	require.Equal(t, counts{}, h.counts(t))
	requireOK(t, do(t, h.request(t, keyOf(env), plain)), applied)
}

// Nesting is bounded at 64 levels: 64 inside an event are accepted, 65 are a 400 that
// stores nothing.
func TestDeepNestingIsBounded(t *testing.T) {
	t.Parallel()
	h := setup(t)
	nested := func(depth int) []byte {
		env := envelope(shipment.InvoicePaid, uuid.New(), 2)
		raw := marshal(t, env)
		note := `"note":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `,`
		return bytes.Replace(raw, []byte(`"currency"`), []byte(note+`"currency"`), 1)
	}
	requireOK(t, do(t, h.request(t, "invoice.paid:deep-62", nested(62))), applied)
	r := do(t, h.request(t, "invoice.paid:deep-65", nested(65)))
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
