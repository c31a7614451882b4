package invoice_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
)

func TestFindTakesAnIDANumberOrItsDigits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.DB.NewRaw(`SELECT setval(pg_get_serial_sequence('invoices', 'seq'), 4710)`).Exec(b.Ctx)
	require.NoError(t, err)
	total := int64(100)
	inv, err := b.Invoices.Issue(b.Ctx, invoice.NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	require.Equal(t, "INV-004711", inv.Number)

	for _, ref := range []string{inv.ID.String(), "INV-004711", "inv-004711", "4711", "004711", " INV-4711 "} {
		got, err := b.Invoices.Find(b.Ctx, ref)
		require.NoError(t, err, ref)
		require.Equal(t, inv.ID, got.ID, ref)
		require.NotNil(t, got.Lines, ref)
	}
	for _, ref := range []string{"4712", "INV-999999", "00000000-0000-0000-0000-000000000000"} {
		_, err := b.Invoices.Find(b.Ctx, ref)
		require.ErrorIs(t, err, invoice.ErrNotFound, ref)
	}
	for _, ref := range []string{"", "INV-", "INV-12a", "-5", "0", "99999999999999999999", "INV 4711"} {
		_, err := b.Invoices.Find(b.Ctx, ref)
		var invalid *invoice.ValidationError
		require.ErrorAs(t, err, &invalid, ref)
	}
}
