package invoice_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

// TestBenchCeilingRunsIssueAndPayStatementForStatement runs Issue and Pay, records
// every statement they send, and compares them with the copies the bench's ceiling
// loop issues straight from pgx (e2e/cmd/bench/ceiling.go): a change to either
// transaction that the bench does not follow makes its ceiling measure something
// finance no longer does. Values do not count (pgtest.NormalizeSQL).
func TestBenchCeilingRunsIssueAndPayStatementForStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, rec := pgtest.OpenRecorded(t, pgtest.NewURL(t, "finance", migrations.Finance()))
	svc, err := invoice.NewService(db, invoice.Config{Destination: destination})
	require.NoError(t, err)
	bench := pgtest.StringConsts(t, "../../../e2e/cmd/bench/ceiling.go")

	rec.Take()
	inv, err := svc.Issue(ctx, invoice.NewInvoice{CustomerID: "ceiling", Currency: "EUR",
		Lines: []invoice.NewLine{{Description: "Pallet", Quantity: 2, UnitPriceMinor: 6000}}})
	require.NoError(t, err)
	requireSameStatements(t, "issue", rec.Take(), bench, "sqlIssue", "sqlLine", "sqlOutbox")

	_, err = svc.Pay(ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-1", AmountMinor: inv.TotalMinor})
	require.NoError(t, err)
	requireSameStatements(t, "pay", rec.Take(), bench,
		"sqlLockInvoice", "sqlPaymentByID", "sqlPayment", "sqlSettle", "sqlOutbox", "sqlLines")
}

// requireSameStatements checks that ran, less transaction control, is the bench's
// constants names in order.
func requireSameStatements(t *testing.T, what string, ran []string, bench map[string]string, names ...string) {
	t.Helper()
	var got, want []string
	for _, s := range ran {
		switch n := pgtest.NormalizeSQL(s); n {
		case "begin", "commit", "rollback":
		default:
			got = append(got, n)
		}
	}
	for _, name := range names {
		s, ok := bench[name]
		require.True(t, ok, "the bench declares no %s", name)
		want = append(want, pgtest.NormalizeSQL(s))
	}
	require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"),
		"%s: the bench's ceiling (e2e/cmd/bench/ceiling.go) no longer issues what finance runs", what)
}
