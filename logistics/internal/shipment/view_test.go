package shipment_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/logistics/internal/shipment"
)

func TestHistoryViewWritesUTCAndNullForTheCreatingChange(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	history := []shipment.Change{
		{To: "waiting", Version: 1, Cause: "invoice.paid", IdempotencyKey: "k1", At: at},
		{From: "waiting", To: "picking", Version: 2, Cause: shipment.CauseWarehouse, At: at},
	}
	b, err := json.Marshal(shipment.HistoryView(history))
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"from_state":null,"to_state":"waiting","version":1,"cause":"invoice.paid","idempotency_key":"k1","at":"2026-12-02T09:00:00Z"},
		{"from_state":"waiting","to_state":"picking","version":2,"cause":"warehouse","at":"2026-12-02T09:00:00Z"}]`, string(b))
	b, err = json.Marshal(shipment.HistoryView(nil))
	require.NoError(t, err)
	require.Equal(t, "[]", string(b))
}
