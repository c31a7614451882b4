package webhookapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/shipment"
)

// edit is the signed body of env with old replaced by new once, for members JSON
// encoders never write: a name twice, a name in the wrong case.
func edit(t *testing.T, env map[string]any, old, new string) []byte {
	t.Helper()
	body := marshal(t, env)
	require.Contains(t, string(body), old)
	return bytes.Replace(body, []byte(old), []byte(new), 1)
}

// withExtra is env with one more member in data (finance may add members), nested
// depth levels of arrays deep.
func withExtra(env map[string]any, depth int) map[string]any {
	var v any = []any{}
	for range depth - 1 {
		v = []any{v}
	}
	env["data"].(map[string]any)["extra"] = v
	return env
}

func problemOf(t *testing.T, body []byte) problem.Problem {
	t.Helper()
	var p problem.Problem
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}

// Each refusal of strict parsing on the single endpoint, all checked after the
// signature over the raw body: a member named twice at any depth, a member matching a
// field only case-insensitively, a query parameter, nesting deeper than 64 and data
// after the object. Nothing is stored; members finance may add are still admitted.
func TestStrictParsingRefusesAmbiguousEvents(t *testing.T) {
	t.Parallel()
	h := setup(t)
	paid := func() map[string]any { return envelope(shipment.InvoicePaid, uuid.New(), 2) }
	deep := marshal(t, withExtra(paid(), strict.MaxDepth-1))

	tests := []struct {
		name   string
		body   []byte
		query  string
		slug   string
		detail string
	}{
		{"query parameter", marshal(t, paid()), "debug=1", "unknown-parameter", `unknown query parameter "debug"`},
		{"duplicate member", edit(t, paid(), `"sequence":2`, `"sequence":2,"sequence":3`), "",
			"malformed-event", `duplicate member "sequence"`},
		{"duplicate member in data", edit(t, paid(), `"total_minor":12000`, `"total_minor":12000,"total_minor":1`), "",
			"malformed-event", `duplicate member "total_minor" in data`},
		{"duplicate member under an unknown member", edit(t, paid(), `"currency":"EUR"`, `"currency":"EUR","lines":[{"a":1,"a":2}]`), "",
			"malformed-event", `duplicate member "a" in data.lines[0]`},
		{"member in other case", edit(t, paid(), `"id":"`, `"ID":"`), "",
			"malformed-event", `unknown member "ID"`},
		{"member in other case in data", edit(t, paid(), `"invoice_id"`, `"Invoice_ID"`), "",
			"malformed-event", `unknown member "Invoice_ID" in data`},
		{"nesting deeper than 64", deep, "", "malformed-event", "nesting deeper than 64 in data.extra" + strings.Repeat("[0]", 62)},
		{"data after the object", append(marshal(t, paid()), " x"...), "", "malformed-event", "data after the JSON value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := h.request(t, "invoice.paid:"+tc.name, tc.body)
			req.URL.RawQuery = tc.query
			r := do(t, req)
			requireProblem(t, r, http.StatusBadRequest, tc.slug)
			require.Equal(t, tc.detail, problemOf(t, r.Body).Detail)
		})
	}
	require.Equal(t, counts{}, h.counts(t))

	unsigned := h.request(t, "invoice.paid:x", edit(t, paid(), `"sequence":2`, `"sequence":2,"sequence":3`))
	unsigned.Header.Del(webhook.HeaderSignature)
	unsigned.URL.RawQuery = "debug=1"
	requireProblem(t, do(t, unsigned), http.StatusUnauthorized, "invalid-signature")

	requireOK(t, h.send(t, paid()), applied)
	extended := paid()
	extended["data"].(map[string]any)["paid_minor"] = 12000
	extended["data"].(map[string]any)["status"] = "paid"
	requireOK(t, h.send(t, extended), applied)
	requireOK(t, h.send(t, withExtra(paid(), strict.MaxDepth-2)), applied)
}

// The batch endpoint keeps its contract: a fault of the whole request (its query, its
// own members) refuses it all; a fault inside one item, wherever it is, is that item's
// answer, as the single endpoint would give it.
func TestStrictParsingOfBatches(t *testing.T) {
	t.Parallel()
	h := setup(t)
	paid := func() map[string]any { return envelope(shipment.InvoicePaid, uuid.New(), 2) }
	good := paid()
	item := marshal(t, batchItem(paid()))

	for name, tc := range map[string]struct {
		body   []byte
		query  string
		slug   string
		detail string
	}{
		"query parameter": {batchBody(t, batchItem(paid())), "items=1", "unknown-parameter", `unknown query parameter "items"`},
		"duplicate member": {[]byte(`{"items":[` + string(item) + `],"items":[` + string(item) + `]}`), "",
			"malformed-batch", `the body must be one JSON object {"items":[...]}: duplicate member "items"`},
		"member in other case": {[]byte(`{"Items":[` + string(item) + `]}`), "",
			"malformed-batch", `the body must be one JSON object {"items":[...]}: unknown member "Items"`},
	} {
		t.Run(name, func(t *testing.T) {
			req := h.batchRequest(t, tc.body)
			req.URL.RawQuery = tc.query
			r := do(t, req)
			requireProblem(t, r, http.StatusBadRequest, tc.slug)
			require.Equal(t, tc.detail, problemOf(t, r.Body).Detail)
		})
	}
	require.Equal(t, counts{}, h.counts(t))

	dupInEvent, caseInEvent, deep := paid(), paid(), withExtra(paid(), strict.MaxDepth-1)
	got := h.sendBatch(t,
		batchItem(good),
		map[string]any{"idempotency_key": keyOf(dupInEvent), "attempt": 1,
			"event": json.RawMessage(edit(t, dupInEvent, `"sequence":2`, `"sequence":2,"sequence":2`))},
		map[string]any{"idempotency_key": keyOf(caseInEvent), "attempt": 1,
			"event": json.RawMessage(edit(t, caseInEvent, `"occurred_at"`, `"Occurred_At"`))},
		batchItem(deep),
		json.RawMessage(`{"idempotency_key":"k-1","idempotency_key":"k-2","event":{}}`),
		json.RawMessage(`{"Idempotency_Key":"k-1","event":{}}`),
	)
	require.Equal(t, ok(keyOf(good), false, false), got[0])
	requireRefused(t, got[1], keyOf(dupInEvent), http.StatusBadRequest, "malformed-event")
	require.Equal(t, `duplicate member "sequence"`, got[1].Error.Detail)
	requireRefused(t, got[2], keyOf(caseInEvent), http.StatusBadRequest, "malformed-event")
	require.Equal(t, `unknown member "Occurred_At"`, got[2].Error.Detail)
	requireRefused(t, got[3], keyOf(deep), http.StatusBadRequest, "malformed-event")
	requireRefused(t, got[4], "", http.StatusBadRequest, "malformed-item")
	require.Contains(t, got[4].Error.Detail, `duplicate member "idempotency_key"`)
	requireRefused(t, got[5], "", http.StatusBadRequest, "malformed-item")
	require.Contains(t, got[5].Error.Detail, `unknown member "Idempotency_Key"`)
	require.Equal(t, map[string]string{keyOf(good): "applied"}, h.results(t))
}
