package webhookapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/inbox"

	"handoff/logistics/internal/shipment"
)

// deliverAgain sends env again, alone or in a batch, and checks the answer: a
// duplicate, or 422 idempotency-key-reused.
func (h harness) deliverAgain(t *testing.T, env map[string]any, batch, duplicate bool) {
	t.Helper()
	switch {
	case batch && duplicate:
		require.Equal(t, ok(keyOf(env), true, false), h.sendBatch(t, batchItem(env))[0])
	case batch:
		requireRefused(t, h.sendBatch(t, batchItem(env))[0], keyOf(env), http.StatusUnprocessableEntity, "idempotency-key-reused")
	case duplicate:
		requireOK(t, h.send(t, env), `{"status":"ok","duplicate":true}`)
	default:
		requireProblem(t, h.send(t, env), http.StatusUnprocessableEntity, "idempotency-key-reused")
	}
}

// copyOf is a deep copy of an envelope.
func copyOf(t *testing.T, env map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(marshal(t, env), &out))
	return out
}

// The payload fingerprint covers the fact (type, sequence, data), not the envelope:
// the same key under a new envelope id and time, as a restored finance emits it, is
// a duplicate on either endpoint; the same key with other data or another sequence is
// a reused key.
func TestSameFactUnderANewEnvelopeIsADuplicate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		change    func(env, data map[string]any)
		duplicate bool
	}{
		"new id and occurred_at": {func(env, _ map[string]any) {
			env["id"], env["occurred_at"] = uuid.NewString(), "2026-12-24T08:00:00+01:00"
		}, true},
		"other data":     {func(_, data map[string]any) { data["total_minor"] = 12001 }, false},
		"other sequence": {func(env, _ map[string]any) { env["sequence"] = 3 }, false},
	}
	for name, tt := range tests {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, batch %v", name, batch), func(t *testing.T) {
				t.Parallel()
				h := setup(t)
				env := envelope(shipment.InvoicePaid, uuid.New(), 2)
				requireOK(t, h.send(t, env), applied)

				again := copyOf(t, env)
				tt.change(again, again["data"].(map[string]any))
				h.deliverAgain(t, again, batch, tt.duplicate)
				require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
			})
		}
	}
}

// A record stored before the fingerprint left the envelope out holds the hash of the
// whole envelope: a retry of that very envelope is still a duplicate; the same fact
// under a new envelope is refused, as it was then.
func TestRecordsHashedWithTheEnvelopeStillKnowTheirRetries(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch %v", batch), func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			env := envelope(shipment.InvoicePaid, uuid.New(), 2)
			requireOK(t, h.send(t, env), applied)
			whole, err := inbox.Hash(env)
			require.NoError(t, err)
			_, err = h.db.NewRaw(`UPDATE logistics_processed_events SET payload_hash = ? WHERE idempotency_key = ?`,
				whole, keyOf(env)).Exec(context.Background())
			require.NoError(t, err)

			h.deliverAgain(t, env, batch, true)
			again := copyOf(t, env)
			again["id"] = uuid.NewString()
			h.deliverAgain(t, again, batch, false)
			require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
		})
	}
}
