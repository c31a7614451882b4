package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/audit"
)

func TestViewsWriteUTCAndLeaveOutWhatAnActionLacks(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	from := time.Date(2026, 12, 2, 10, 0, 0, 0, paris)
	entries := []audit.Entry{
		{ID: 2, At: from, Actor: "ops", Action: audit.Retry, Reason: "r", Count: 3,
			Filter: &audit.Filter{Status: "failed", From: &from}},
		{ID: 1, At: from, Actor: "ops", Action: audit.Pause, Reason: "r", Destination: "http://l/x"},
	}
	b, err := json.Marshal(audit.Views(entries))
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"id":2,"at":"2026-12-02T09:00:00Z","actor":"ops","action":"retry","reason":"r",
		 "event_id":null,"invoice_id":null,"count":3,"filter":{"status":"failed","from":"2026-12-02T09:00:00Z"}},
		{"id":1,"at":"2026-12-02T09:00:00Z","actor":"ops","action":"pause","reason":"r",
		 "event_id":null,"invoice_id":null,"count":0,"destination":"http://l/x"}]`, string(b))
	require.Equal(t, paris, entries[0].Filter.From.Location(), "the entry's own filter is left as it was")
	require.Equal(t, "[]", func() string { b, _ := json.Marshal(audit.Views(nil)); return string(b) }())
}
