package warehouseapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/logistics/internal/logisticstest"
	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/warehouseapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	warehouseToken = logisticstest.WarehouseToken
	opsToken       = logisticstest.OpsToken
)

type bundle struct {
	db  *bun.DB
	svc *shipment.Service
	url string
}

func setup(t *testing.T) bundle {
	t.Helper()
	db := logisticstest.NewDB(t)
	svc := shipment.NewService(db)
	base := logisticstest.Serve(t, warehouseapi.New(svc, logisticstest.Tokens(t)).Register)
	return bundle{db: db, svc: svc, url: base}
}

// paid creates a waiting shipment for a new invoice, as finance's event would.
func (b bundle) paid(t *testing.T) uuid.UUID {
	t.Helper()
	inv := uuid.New()
	_, err := logisticstest.Apply(b.db, b.svc, shipment.Event{
		Type: shipment.InvoicePaid, InvoiceID: inv, InvoiceNumber: "INV-1", CustomerID: "cust-1",
		Sequence: 2, IdempotencyKey: "invoice.paid:" + inv.String() + ":pay-1",
	})
	require.NoError(t, err)
	return inv
}

func (b bundle) do(t *testing.T, method, path, token, body string) logisticstest.Response {
	t.Helper()
	return logisticstest.Call(t, method, b.url+path, token, body)
}

func (b bundle) get(t *testing.T, path string) logisticstest.Response {
	t.Helper()
	return b.do(t, http.MethodGet, path, warehouseToken, "")
}

// view is a shipment as the API shows it.
type view struct {
	ID            string `json:"id"`
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	CustomerID    string `json:"customer_id"`
	State         string `json:"state"`
	Version       int64  `json:"version"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	History       []struct {
		FromState      *string `json:"from_state"`
		ToState        string  `json:"to_state"`
		Version        int64   `json:"version"`
		Cause          string  `json:"cause"`
		IdempotencyKey string  `json:"idempotency_key"`
	} `json:"history"`
}

type list struct {
	Items      []view `json:"items"`
	NextCursor string `json:"next_cursor"`
}

func decode[T any](t *testing.T, r logisticstest.Response, status int) T {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v))
	return v
}

func (b bundle) shipmentOf(t *testing.T, inv uuid.UUID) view {
	t.Helper()
	l := decode[list](t, b.get(t, "/v1/shipments?invoice_id="+inv.String()), http.StatusOK)
	require.Len(t, l.Items, 1)
	return l.Items[0]
}

func TestEveryRouteNeedsAWarehouseToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.NewString()
	for _, route := range [][2]string{
		{http.MethodGet, "/v1/shipments"},
		{http.MethodGet, "/v1/shipments/" + id},
		{http.MethodPost, "/v1/shipments/" + id + "/transitions"},
	} {
		require.Equal(t, http.StatusUnauthorized, b.do(t, route[0], route[1], "", "").Status)
		require.Equal(t, http.StatusUnauthorized, b.do(t, route[0], route[1], "not-a-token-at-all", "").Status)
		require.Equal(t, http.StatusForbidden, b.do(t, route[0], route[1], opsToken, "").Status)
	}
}

func TestGetShowsTheShipmentWithItsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.paid(t)
	id := b.shipmentOf(t, inv).ID

	v := decode[view](t, b.get(t, "/v1/shipments/"+id), http.StatusOK)
	require.Equal(t, inv.String(), v.InvoiceID)
	require.Equal(t, "INV-1", v.InvoiceNumber)
	require.Equal(t, "cust-1", v.CustomerID)
	require.Equal(t, "waiting", v.State)
	require.EqualValues(t, 1, v.Version)
	require.NotEmpty(t, v.CreatedAt)
	require.NotEmpty(t, v.UpdatedAt)
	require.Len(t, v.History, 1)
	require.Nil(t, v.History[0].FromState)
	require.Equal(t, "waiting", v.History[0].ToState)
	require.Equal(t, "invoice.paid", v.History[0].Cause)
	require.Equal(t, "invoice.paid:"+inv.String()+":pay-1", v.History[0].IdempotencyKey)

	require.Equal(t, http.StatusNotFound, b.get(t, "/v1/shipments/"+uuid.NewString()).Status)
	require.Equal(t, http.StatusNotFound, b.get(t, "/v1/shipments/not-a-uuid").Status)
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.shipmentOf(t, b.paid(t)).ID
	move := func(body string) logisticstest.Response {
		return b.do(t, http.MethodPost, "/v1/shipments/"+id+"/transitions", warehouseToken, body)
	}

	v := decode[view](t, move(`{"to":"picking","version":1}`), http.StatusOK)
	require.Equal(t, "picking", v.State)
	require.EqualValues(t, 2, v.Version)
	require.Len(t, v.History, 2)
	require.Equal(t, "warehouse", v.History[1].Cause)

	require.Equal(t, http.StatusConflict, move(`{"to":"packed","version":1}`).Status, "stale version")
	require.Equal(t, http.StatusUnprocessableEntity, move(`{"to":"shipped","version":2}`).Status, "skips packed")
	require.Equal(t, http.StatusUnprocessableEntity, move(`{"to":"cancelled","version":2}`).Status, "finance's move")
	for _, bad := range []string{`{"to":"flying","version":2}`, `{"to":"packed"}`, `{"to":"packed","version":0}`,
		`{"to":"packed","version":"2"}`, `{"to":"packed","version":2,"extra":1}`, `{"to":"packed","version":2} x`, `nope`} {
		require.Equal(t, http.StatusBadRequest, move(bad).Status, bad)
	}
	req, err := http.NewRequest(http.MethodPost, b.url+"/v1/shipments/"+id+"/transitions", strings.NewReader(`{"to":"packed","version":2}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+warehouseToken)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)

	got := decode[view](t, b.get(t, "/v1/shipments/"+id), http.StatusOK)
	require.Equal(t, "picking", got.State, "refused moves changed nothing")
	require.EqualValues(t, 2, got.Version)
	require.Len(t, got.History, 2)

	unknown := b.do(t, http.MethodPost, "/v1/shipments/"+uuid.NewString()+"/transitions", warehouseToken, `{"to":"packed","version":1}`)
	require.Equal(t, http.StatusNotFound, unknown.Status)

	for i, to := range []string{"packed", "shipped", "delivered"} {
		v = decode[view](t, move(fmt.Sprintf(`{"to":%q,"version":%d}`, to, i+2)), http.StatusOK)
		require.Equal(t, to, v.State)
	}
	require.EqualValues(t, 5, v.Version)
}

func TestListPagesWithAnOpaqueCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for range 5 {
		want = append(want, b.paid(t).String())
	}

	var got []string
	path := "/v1/shipments?limit=2"
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, 3)
		l := decode[list](t, b.get(t, path), http.StatusOK)
		for _, v := range l.Items {
			got = append(got, v.InvoiceID)
		}
		if l.NextCursor == "" {
			break
		}
		path = "/v1/shipments?limit=2&cursor=" + url.QueryEscape(l.NextCursor)
	}
	require.Equal(t, want, got)

	all := decode[list](t, b.get(t, "/v1/shipments"), http.StatusOK)
	require.Len(t, all.Items, 5)
	require.Empty(t, all.NextCursor)

	id := all.Items[0].ID
	decode[view](t, b.do(t, http.MethodPost, "/v1/shipments/"+id+"/transitions", warehouseToken, `{"to":"picking","version":1}`), http.StatusOK)
	picking := decode[list](t, b.get(t, "/v1/shipments?state=picking"), http.StatusOK)
	require.Len(t, picking.Items, 1)
	require.Equal(t, id, picking.Items[0].ID)
	waiting := decode[list](t, b.get(t, "/v1/shipments?state=waiting&limit=200"), http.StatusOK)
	require.Len(t, waiting.Items, 4)

	none := decode[list](t, b.get(t, "/v1/shipments?invoice_id="+uuid.NewString()), http.StatusOK)
	require.NotNil(t, none.Items)
	require.Empty(t, none.Items)
}

func TestListRejectsBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, q := range []string{"state=lost", "invoice_id=42", "limit=0", "limit=501", "limit=ten", "limit=-1",
		"cursor=garbage", "cursor=" + url.QueryEscape("czE6MA"), "cursor=" + url.QueryEscape("eDox")} {
		r := b.get(t, "/v1/shipments?"+q)
		require.Equal(t, http.StatusBadRequest, r.Status, q)
	}
}
