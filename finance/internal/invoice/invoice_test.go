package invoice

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr(v int64) *int64 { return &v }

func TestBuildComputesAmounts(t *testing.T) {
	t.Parallel()
	inv, err := NewInvoice{CustomerID: "cust-42", Currency: "EUR", Lines: []NewLine{
		{Description: "Pallet", Quantity: 2, UnitPriceMinor: 6000},
		{Description: "Free sample", Quantity: 1, UnitPriceMinor: 0},
	}}.build()
	require.NoError(t, err)
	require.EqualValues(t, 12000, inv.TotalMinor)
	require.Equal(t, StatusIssued, inv.Status)
	require.EqualValues(t, 1, inv.EventSeq)
	require.Equal(t, []Line{
		{No: 1, Description: "Pallet", Quantity: 2, UnitPriceMinor: 6000, AmountMinor: 12000},
		{No: 2, Description: "Free sample", Quantity: 1, UnitPriceMinor: 0, AmountMinor: 0},
	}, inv.Lines)

	inv, err = NewInvoice{CustomerID: "c", Currency: "JPY", TotalMinor: ptr(MaxAmountMinor)}.build()
	require.NoError(t, err)
	require.EqualValues(t, MaxAmountMinor, inv.TotalMinor)
	require.Empty(t, inv.Lines)
}

func TestBuildRefusesInvalidInvoices(t *testing.T) {
	t.Parallel()
	line := func(q, p int64) NewInvoice {
		return NewInvoice{CustomerID: "c", Currency: "EUR", Lines: []NewLine{{Description: "x", Quantity: q, UnitPriceMinor: p}}}
	}
	many := make([]NewLine, MaxLines+1)
	for i := range many {
		many[i] = NewLine{Description: "x", Quantity: 1, UnitPriceMinor: 1}
	}
	cases := map[string]struct {
		in    NewInvoice
		field string
	}{
		"empty customer":        {NewInvoice{Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"customer of spaces":    {NewInvoice{CustomerID: " c ", Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"customer with NUL":     {NewInvoice{CustomerID: "c\x00", Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"customer bad UTF-8":    {NewInvoice{CustomerID: "c\xff", Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"customer of 256 bytes": {NewInvoice{CustomerID: strings.Repeat("é", 128), Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"customer of 100 CJK":   {NewInvoice{CustomerID: strings.Repeat("顧", 100), Currency: "EUR", TotalMinor: ptr(1)}, "customer_id"},
		"fund code":             {NewInvoice{CustomerID: "c", Currency: "CHE", TotalMinor: ptr(1)}, "currency"},
		"no currency":           {NewInvoice{CustomerID: "c", TotalMinor: ptr(1)}, "currency"},
		"negative total":        {NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: ptr(-1)}, "total_minor"},
		"both":                  {NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: ptr(1), Lines: []NewLine{}}, "total_minor"},
		"too many lines":        {NewInvoice{CustomerID: "c", Currency: "EUR", Lines: many}, "lines"},
		"zero quantity":         {line(0, 1), "lines[0].quantity"},
		"huge quantity":         {line(MaxAmountMinor+1, 0), "lines[0].quantity"},
		"negative price":        {line(1, -5), "lines[0].unit_price_minor"},
		"product over the cap":  {line(MaxAmountMinor, 2), "lines[0]"},
		"all free":              {line(5, 0), "lines"},
		"description with tab":  {NewInvoice{CustomerID: "c", Currency: "EUR", Lines: []NewLine{{Description: "a\tb", Quantity: 1, UnitPriceMinor: 1}}}, "lines[0].description"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.in.build()
			var invalid *ValidationError
			require.True(t, errors.As(err, &invalid), "got %v", err)
			require.Equal(t, tc.field, invalid.Fields[0].Field, invalid.Error())
		})
	}
}

func TestBoundedProductNeverOverflows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q, p, want int64
		ok         bool
	}{
		{2, 6000, 12000, true},
		{MaxAmountMinor, 1, MaxAmountMinor, true},
		{MaxAmountMinor, 0, 0, true},
		{1_000_000_000, 1_000_000_000, 0, false},
		{MaxAmountMinor, MaxAmountMinor, 0, false},
		{MaxAmountMinor/3 + 1, 3, 0, false},
	} {
		got, ok := boundedProduct(tc.q, tc.p)
		require.Equal(t, tc.ok, ok, "%d × %d", tc.q, tc.p)
		require.Equal(t, tc.want, got, "%d × %d", tc.q, tc.p)
	}
}

func TestPaymentTransitions(t *testing.T) {
	t.Parallel()
	inv := Invoice{TotalMinor: 100, Status: StatusIssued, EventSeq: 1}

	// Each payment in turn, and the invoice it leaves: a refused one changes nothing.
	for _, step := range []struct {
		amount, paid, eventSeq int64
		err                    error
		settled                bool
		status                 Status
	}{
		{amount: 40, paid: 40, eventSeq: 1, status: StatusPartiallyPaid},
		{amount: 61, paid: 40, eventSeq: 1, err: ErrAmountExceedsBalance, status: StatusPartiallyPaid},
		{amount: 60, paid: 100, eventSeq: 2, settled: true, status: StatusPaid},
		{amount: 1, paid: 100, eventSeq: 2, err: ErrAlreadyPaid, status: StatusPaid},
	} {
		settled, err := inv.applyPayment(step.amount)
		if step.err != nil {
			require.ErrorIs(t, err, step.err, step.amount)
		} else {
			require.NoError(t, err, step.amount)
		}
		require.Equal(t, step.settled, settled, step.amount)
		require.Equal(t, step.status, inv.Status, step.amount)
		require.Equal(t, step.paid, inv.PaidMinor, step.amount)
		require.Equal(t, step.eventSeq, inv.EventSeq, step.amount)
	}

	amount, err := inv.applyRefund()
	require.NoError(t, err)
	require.EqualValues(t, 100, amount)
	require.Equal(t, StatusRefunded, inv.Status)
	require.EqualValues(t, 3, inv.EventSeq)

	_, err = inv.applyRefund()
	require.ErrorIs(t, err, ErrAlreadyRefunded)
	_, err = inv.applyPayment(1)
	require.ErrorIs(t, err, ErrAlreadyPaid)
}

func TestRefundNeedsAPaidInvoice(t *testing.T) {
	t.Parallel()
	for _, s := range []Status{StatusIssued, StatusPartiallyPaid} {
		inv := Invoice{TotalMinor: 100, PaidMinor: 10, Status: s}
		_, err := inv.applyRefund()
		require.ErrorIs(t, err, ErrNotPaid)
		require.Equal(t, s, inv.Status)
	}
}

func TestCurrencies(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"EUR", "USD", "HUF", "SEK", "TRY", "IDR", "JPY", "XOF", "CHF"} {
		require.True(t, IsCurrency(code), code)
	}
	for _, code := range []string{"", "eur", "EURO", "XXX", "XTS", "XAU", "HRK", "#", "ABC"} {
		require.False(t, IsCurrency(code), code)
	}
}

func TestEventKeys(t *testing.T) {
	t.Parallel()
	inv := Invoice{Number: "INV-000001"}
	inv.ID[15] = 1
	id := inv.ID.String()
	require.Equal(t, "invoice.issued:"+id, issuedEvent(inv).idempotencyKey())
	require.Equal(t, "invoice.paid:"+id+":pay-1", paidEvent(inv, Payment{PaymentID: "pay-1"}).idempotencyKey())
	require.Equal(t, "invoice.refunded:"+id+":ref-1", refundedEvent(inv, Refund{RefundID: "ref-1"}).idempotencyKey())
}
