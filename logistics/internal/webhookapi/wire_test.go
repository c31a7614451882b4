package webhookapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/wire"
)

// TestEventValuesFollowTheWire checks the values of an event's data against package
// wire's rules, the ones finance checks its input with: the limits are in bytes, ids
// that become part of a key are printable ASCII, and a refusal names the field.
func TestEventValuesFollowTheWire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		field string
		value any
		want  string // the refused field; empty: accepted
	}{
		{"customer of 255 bytes", "customer_id", strings.Repeat("顧", 85), ""},
		{"customer of 100 CJK characters", "customer_id", strings.Repeat("顧", 100), "data.customer_id"},
		{"customer with an umlaut", "customer_id", "Müller GmbH", ""},
		{"customer with a zero-width space", "customer_id", "cust\u200b42", "data.customer_id"},
		{"customer ending in a space", "customer_id", "cust-42 ", "data.customer_id"},
		{"payment id of 128 bytes", "payment_id", strings.Repeat("p", wire.MaxKeyIDBytes), ""},
		{"payment id of 129 bytes", "payment_id", strings.Repeat("p", wire.MaxKeyIDBytes+1), "data.payment_id"},
		{"payment id with an umlaut", "payment_id", "Zahlung-Müller", "data.payment_id"},
		{"number with a control character", "invoice_number", "INV\x7f1", "data.invoice_number"},
		{"total of 1e15", "total_minor", wire.MaxMinorUnits, ""},
		{"total over 1e15", "total_minor", wire.MaxMinorUnits + 1, "data.total_minor"},
		{"total 0", "total_minor", 0, ""},
		{"lower-case currency", "currency", "eur", "data.currency"},
		{"no currency", "currency", "", "data.currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := map[string]any{
				"invoice_id": uuid.NewString(), "invoice_number": "INV-000042", "customer_id": "cust-42",
				"currency": "EUR", "total_minor": 12000, "payment_id": "pay-1",
			}
			data[tt.field] = tt.value
			body, err := json.Marshal(map[string]any{"id": uuid.NewString(), "type": "invoice.paid",
				"occurred_at": "2026-03-01T12:00:00Z", "sequence": 2, "data": data})
			require.NoError(t, err)
			_, err = parseEvent(body)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var p *problem.Problem
			require.True(t, errors.As(err, &p), "got %v", err)
			require.Len(t, p.Errors, 1, p.Errors)
			require.Equal(t, tt.want, p.Errors[0].Field)
		})
	}
}
