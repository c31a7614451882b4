package invoice

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/wire"
)

// TestInputOnTheWire checks the identifiers an event carries to logistics: what the
// wire's rules refuse, finance refuses with a problem naming the field; what they
// accept, finance accepts.
func TestInputOnTheWire(t *testing.T) {
	t.Parallel()
	payment := func(id string) error { return NewPayment{PaymentID: id, AmountMinor: 1}.validate() }
	refund := func(id string) error { return NewRefund{RefundID: id}.validate() }
	customer := func(id string) error {
		_, err := NewInvoice{CustomerID: id, Currency: "EUR", TotalMinor: ptr(1)}.build()
		return err
	}
	tests := []struct {
		name  string
		input func(string) error
		in    string
		field string // empty: accepted
	}{
		{"payment id of 128 bytes", payment, strings.Repeat("p", wire.MaxKeyIDBytes), ""},
		{"payment id with inner spaces", payment, "PAY 2026 0001", ""},
		{"payment id of 129 bytes", payment, strings.Repeat("p", wire.MaxKeyIDBytes+1), "payment_id"},
		{"payment id with an umlaut", payment, "Zahlung-Müller", "payment_id"},
		{"refund id of 128 bytes", refund, strings.Repeat("r", wire.MaxKeyIDBytes), ""},
		{"refund id with an accent", refund, "réf-1", "refund_id"},
		{"customer id of 255 bytes", customer, strings.Repeat("顧", 85), ""},
		{"customer id of 100 CJK characters", customer, strings.Repeat("顧", 100), "customer_id"},
		{"customer id of 255 ASCII characters", customer, strings.Repeat("c", 255), ""},
		{"customer id with a zero-width space", customer, "cust\u200b42", "customer_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.input(tt.in)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var invalid *ValidationError
			require.True(t, errors.As(err, &invalid), "got %v", err)
			require.Equal(t, tt.field, invalid.Fields[0].Field)
		})
	}
}

func TestEveryCurrencyFitsTheWire(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, currencies)
	for code := range currencies {
		require.NoError(t, wire.CheckCurrency(code), code)
	}
}

// FuzzAcceptedInputFitsTheWire checks that everything finance accepts for an event
// is accepted by the wire's rules, which logistics applies to the events it
// receives: the customer id, the payment and refund ids, the total, and the keys
// built from them.
func FuzzAcceptedInputFitsTheWire(f *testing.F) {
	f.Add("cust-42", "pay-1", "ref-1", int64(12000))
	f.Add(strings.Repeat("顧", 100), "Zahlung-Müller", "réf-1", int64(1))
	f.Add(strings.Repeat("c", 255), strings.Repeat("p", 129), " r", int64(wire.MaxMinorUnits+1))
	f.Fuzz(func(t *testing.T, customer, paymentID, refundID string, total int64) {
		nv := NewInvoice{CustomerID: customer, Currency: "EUR", TotalMinor: &total}
		inv, err := nv.build()
		if err != nil {
			return
		}
		inv.ID, inv.Number = uuid.New(), "INV-000001"
		if err := wire.CheckID(inv.CustomerID); err != nil {
			t.Fatalf("customer_id %q accepted: %v", customer, err)
		}
		if err := wire.CheckMinorUnits(inv.TotalMinor); err != nil {
			t.Fatalf("total %d accepted: %v", total, err)
		}
		events := []event{issuedEvent(inv)}
		if (NewPayment{PaymentID: paymentID, AmountMinor: 1}).validate() == nil {
			events = append(events, paidEvent(inv, Payment{PaymentID: paymentID}))
		}
		if (NewRefund{RefundID: refundID}).validate() == nil {
			events = append(events, refundedEvent(inv, Refund{RefundID: refundID}))
		}
		for _, ev := range events {
			if err := wire.CheckKey(ev.idempotencyKey()); err != nil {
				t.Fatalf("key %q of accepted input: %v", ev.idempotencyKey(), err)
			}
			for _, ref := range []string{ev.data.PaymentID, ev.data.RefundID} {
				if err := wire.CheckKeyID(ref); ref != "" && err != nil {
					t.Fatalf("id %q accepted: %v", ref, err)
				}
			}
		}
	})
}
