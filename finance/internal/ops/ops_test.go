package ops_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type reconciliations struct {
	r   ops.Reconciliation
	ok  bool
	err error
}

func (f reconciliations) Latest(context.Context) (ops.Reconciliation, bool, error) {
	return f.r, f.ok, f.err
}

type archive map[string][]outbox.EventDetail

func (a archive) AggregateEvents(_ context.Context, key string) ([]outbox.EventDetail, error) {
	return a[key], nil
}

// service is the operators' service of cfg over a fresh database, and its invoices.
func service(t *testing.T, cfg ops.Config) (*ops.Service, *invoice.Service) {
	t.Helper()
	d := financetest.New(t)
	return d.Ops(t, cfg), d.Invoices
}

func TestNewNeedsItsCollaborators(t *testing.T) {
	t.Parallel()
	_, err := ops.New(ops.Config{})
	require.Error(t, err)
}

func TestOverviewShowsTheLatestReconciliation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	finished := time.Now()
	cases := []struct {
		name  string
		src   ops.Reconciliations
		clean bool
		note  string
	}{
		{"none configured", nil, false, "reconciliation is not configured"},
		{"not run yet", reconciliations{}, false, "no reconciliation has run yet"},
		{"unreadable", reconciliations{err: errors.New("boom")}, false, "the latest reconciliation could not be read"},
		{"clean", reconciliations{ok: true, r: ops.Reconciliation{FinishedAt: finished, Delivered: 3, Processed: 3}}, true, ""},
		{"discrepancies", reconciliations{ok: true, r: ops.Reconciliation{FinishedAt: finished, MissingCount: 120,
			Missing: []string{"invoice.paid:x:y"}}}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := service(t, ops.Config{Reconciliations: c.src})
			ov, err := svc.Overview(ctx)
			require.NoError(t, err)
			require.Equal(t, c.note, ov.ReconciliationNote)
			require.Equal(t, c.note == "", ov.Reconciliation != nil)
			if ov.Reconciliation != nil {
				require.Equal(t, c.clean, ov.Reconciliation.Clean())
				require.True(t, ov.Reconciliation.FinishedAt.Equal(finished))
			}
		})
	}
}

// Events that retention moved to the archive are part of the trace, in sequence order.
func TestTraceMergesArchivedEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	arch := archive{}
	svc, invoices := service(t, ops.Config{Archive: arch})
	total := int64(100)
	inv, err := invoices.Issue(ctx, invoice.NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	_, err = invoices.Pay(ctx, inv.ID, invoice.NewPayment{PaymentID: "p-1", AmountMinor: total})
	require.NoError(t, err)
	archived := outbox.EventDetail{StoredEvent: outbox.StoredEvent{ID: uuid.New(), EventType: "invoice.issued",
		AggregateKey: inv.ID.String(), Sequence: 0, Status: outbox.StatusDelivered}}
	arch[inv.ID.String()] = []outbox.EventDetail{archived}

	tr, err := svc.Trace(ctx, inv.Number)
	require.NoError(t, err)
	require.Len(t, tr.Events, 3)
	require.Equal(t, archived.ID, tr.Events[0].ID)
	require.Equal(t, []int64{0, 1, 2}, []int64{tr.Events[0].Sequence, tr.Events[1].Sequence, tr.Events[2].Sequence})
	require.Nil(t, tr.Logistics)
	require.Contains(t, tr.LogisticsNote, "LOGISTICS_OPS_TOKEN")
	_, ok := tr.Processed(archived.IdempotencyKey)
	require.False(t, ok)
}

func TestAggregateKeyResolvesNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, invoices := service(t, ops.Config{})
	total := int64(100)
	inv, err := invoices.Issue(ctx, invoice.NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	for _, ref := range []string{inv.Number, "1", inv.ID.String()} {
		key, err := svc.AggregateKey(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, inv.ID.String(), key)
	}
	unknown := uuid.NewString()
	key, err := svc.AggregateKey(ctx, unknown)
	require.NoError(t, err, "an id is taken as it is")
	require.Equal(t, unknown, key)
	_, err = svc.AggregateKey(ctx, "INV-000404")
	require.ErrorIs(t, err, invoice.ErrNotFound)
}

// failingLogistics answers every read of logistics' record with err.
type failingLogistics struct{ err error }

func (f *failingLogistics) ProcessedEvents(context.Context, logisticsclient.Query) (logisticsclient.Page, error) {
	return logisticsclient.Page{}, f.err
}

// When logistics' record cannot be read, the trace still shows finance's side and
// says why, the SSRF guard's refusal apart from an unanswered call.
func TestTraceSaysWhyLogisticsIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logistics := &failingLogistics{}
	svc, invoices := service(t, ops.Config{Logistics: logistics})
	total := int64(100)
	inv, err := invoices.Issue(ctx, invoice.NewInvoice{CustomerID: "c", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	cases := []struct {
		name string
		err  error
		note string
	}{
		{"no token", logisticsclient.ErrNotConfigured, "logistics record unavailable: no LOGISTICS_OPS_TOKEN configured"},
		{"refused by logistics", &logisticsclient.StatusError{Status: 403, Type: "forbidden"},
			"logistics record unavailable: logistics answered HTTP 403 (forbidden)"},
		{"refused by the guard", fmt.Errorf("logisticsclient: %w", &egress.BlockedError{Addr: "127.0.0.2:8082", Reason: "loopback"}),
			"logistics record unavailable: the SSRF guard refuses LOGISTICS_API_URL (see OUTBOUND_ALLOW)"},
		{"no answer", errors.New("logisticsclient: connection refused"), "logistics record unavailable: logistics did not answer"},
	}
	for _, c := range cases {
		logistics.err = c.err
		tr, err := svc.Trace(ctx, inv.Number)
		require.NoError(t, err, c.name)
		require.Nil(t, tr.Logistics, c.name)
		require.Equal(t, c.note, tr.LogisticsNote, c.name)
		require.Len(t, tr.Events, 1, c.name)
	}
}
