package opsapi_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"

	"handoff/logistics/internal/logisticstest"
	"handoff/logistics/internal/opsapi"
	"handoff/logistics/internal/processedevents"
	"handoff/logistics/internal/shipment"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	opsToken       = logisticstest.OpsToken
	warehouseToken = logisticstest.WarehouseToken
)

type bundle struct {
	db    *bun.DB
	svc   *shipment.Service
	inbox *inbox.Inbox
	url   string
}

func setup(t *testing.T) bundle {
	t.Helper()
	db := logisticstest.NewDB(t)
	svc := shipment.NewService(db)
	in, err := inbox.New("logistics_processed_events")
	require.NoError(t, err)
	base := logisticstest.Serve(t, opsapi.New(processedevents.NewStore(db), svc, logisticstest.Tokens(t)).Register)
	return bundle{db: db, svc: svc, inbox: in, url: base}
}

// receive processes an event as the webhook does and dates its record at.
func (b bundle) receive(t *testing.T, typ shipment.EventType, inv uuid.UUID, seq int64, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	key := string(typ) + ":" + inv.String()
	ev := shipment.Event{Type: typ, InvoiceID: inv, InvoiceNumber: "INV-000042", CustomerID: "c", Sequence: seq, IdempotencyKey: key}
	_, err := b.inbox.Process(ctx, b.db, inbox.Item{Key: key, PayloadHash: []byte{1},
		Columns: map[string]any{"event_id": uuid.NewString(), "event_type": string(typ), "invoice_id": inv}},
		func(ctx context.Context, r pgdb.Runner) (string, error) {
			res, err := b.svc.ApplyEvent(ctx, r, ev)
			return string(res), err
		})
	require.NoError(t, err)
	_, err = b.db.NewRaw(`UPDATE logistics_processed_events SET received_at = ? WHERE idempotency_key = ?`, at, key).Exec(ctx)
	require.NoError(t, err)
	return key
}

type page struct {
	Items []struct {
		IdempotencyKey string     `json:"idempotency_key"`
		EventType      string     `json:"event_type"`
		InvoiceID      *uuid.UUID `json:"invoice_id"`
		Result         string     `json:"result"`
		ReceivedAt     time.Time  `json:"received_at"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
	Shipment   *struct {
		State   string `json:"state"`
		History []struct {
			From           *string `json:"from_state"`
			To             string  `json:"to_state"`
			IdempotencyKey string  `json:"idempotency_key"`
		} `json:"history"`
	} `json:"shipment"`
}

func (b bundle) get(t *testing.T, token string, q url.Values) (int, []byte) {
	t.Helper()
	r := logisticstest.Call(t, http.MethodGet, b.url+"/v1/ops/processed-events?"+q.Encode(), token, "")
	return r.Status, r.Body
}

func (b bundle) page(t *testing.T, q url.Values) page {
	t.Helper()
	status, body := b.get(t, opsToken, q)
	require.Equal(t, http.StatusOK, status, string(body))
	var p page
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}

func TestNeedsAnOpsToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, _ := b.get(t, "", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = b.get(t, warehouseToken, nil)
	require.Equal(t, http.StatusForbidden, status)
}

func TestInvoiceTraceHasKeysAndShipmentHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := uuid.New()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	issued := b.receive(t, shipment.InvoiceIssued, inv, 1, t0)
	paid := b.receive(t, shipment.InvoicePaid, inv, 2, t0.Add(time.Second))
	b.receive(t, shipment.InvoicePaid, uuid.New(), 2, t0)

	p := b.page(t, url.Values{"invoice_id": {inv.String()}})
	require.Len(t, p.Items, 2)
	require.Equal(t, issued, p.Items[0].IdempotencyKey)
	require.Equal(t, paid, p.Items[1].IdempotencyKey)
	require.Equal(t, "applied", p.Items[1].Result)
	require.Equal(t, inv, *p.Items[1].InvoiceID)
	require.True(t, p.Items[1].ReceivedAt.Equal(t0.Add(time.Second)))
	require.NotNil(t, p.Shipment)
	require.Equal(t, "waiting", p.Shipment.State)
	require.Len(t, p.Shipment.History, 2)
	require.Nil(t, p.Shipment.History[0].From)
	require.Equal(t, paid, p.Shipment.History[1].IdempotencyKey)
	_, body := b.get(t, opsToken, url.Values{"invoice_id": {inv.String()}})
	var raw struct {
		Shipment map[string]json.RawMessage `json:"shipment"`
	}
	require.NoError(t, json.Unmarshal(body, &raw))
	require.ElementsMatch(t, []string{"id", "invoice_id", "invoice_number", "customer_id", "state", "version",
		"last_event_seq", "created_at", "updated_at", "history"}, slices.Collect(maps.Keys(raw.Shipment)),
		"the shipment's fields, flat, as the document's TrackedShipment lists them")
	require.JSONEq(t, "2", string(raw.Shipment["last_event_seq"]))

	none := b.page(t, url.Values{"invoice_id": {uuid.NewString()}})
	require.Empty(t, none.Items)
	require.Nil(t, none.Shipment)
}

// Reconciliation walks a receipt-time window page by page: every key once, in order.
func TestWindowPagesInReceiptOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 5 {
		key := b.receive(t, shipment.InvoicePaid, uuid.New(), 2, t0.Add(time.Duration(i/2)*time.Minute))
		if i < 4 {
			want = append(want, key)
		}
	}
	q := url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(2 * time.Minute).Format(time.RFC3339)}, "limit": {"3"}}
	var got []string
	for range 3 {
		p := b.page(t, q)
		for _, it := range p.Items {
			got = append(got, it.IdempotencyKey)
		}
		require.Nil(t, p.Shipment, "no shipment without an invoice")
		if p.NextCursor == "" {
			break
		}
		q.Set("cursor", p.NextCursor)
	}
	require.Len(t, got, 4)
	require.ElementsMatch(t, want, got)
	require.ElementsMatch(t, want[:2], got[:2], "the earlier minute first")
}

func TestBadQueriesAreProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, q := range []url.Values{
		{"invoice_id": {"4711"}},
		{"from": {"yesterday"}},
		{"limit": {"0"}},
		{"limit": {"100000"}},
		{"cursor": {"nope"}},
		{"from": {"2030-01-02T00:00:00Z"}, "to": {"2030-01-01T00:00:00Z"}},
	} {
		status, body := b.get(t, opsToken, q)
		require.Equal(t, http.StatusBadRequest, status, "%v: %s", q, body)
		require.Contains(t, string(body), "validation-failed")
	}
}
