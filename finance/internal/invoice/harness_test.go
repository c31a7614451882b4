package invoice_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const destination = financetest.Destination

// bundle is finance's invoices over a database of the test's own.
type bundle struct{ *financetest.Domain }

func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{financetest.New(t)}
}

// issue issues an invoice of total to cust-42.
func (b bundle) issue(t *testing.T, total int64) invoice.Invoice {
	t.Helper()
	inv, err := b.Invoices.Issue(b.Ctx, invoice.NewInvoice{CustomerID: "cust-42", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	return inv
}

// pay records payment id of amount on inv.
func (b bundle) pay(t *testing.T, inv invoice.Invoice, id string, amount int64) invoice.PaymentResult {
	t.Helper()
	res, err := b.Invoices.Pay(b.Ctx, inv.ID, invoice.NewPayment{PaymentID: id, AmountMinor: amount})
	require.NoError(t, err)
	return res
}
