package webhookapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/logisticstest"
	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/webhookapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a real logistics webhook endpoint on its own database.
type harness struct {
	db       *bun.DB
	url      string
	batchURL string
	signer   *webhook.Signer
}

func setup(t testing.TB) harness {
	t.Helper()
	db := logisticstest.NewDB(t)

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	h, err := webhookapi.New(webhookapi.Config{
		DB: db, Shipments: shipment.NewService(db), Verifier: webhook.NewVerifier([][]byte{key}),
		Log: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	base := logisticstest.Serve(t, h.Register)
	return harness{
		db: db, url: base + webhookapi.Path, batchURL: base + webhookapi.BatchPath,
		signer: webhook.NewSigner([][]byte{key}),
	}
}

// envelope is an event as finance's dispatcher sends it.
func envelope(typ shipment.EventType, invoice uuid.UUID, seq int64) map[string]any {
	data := map[string]any{
		"invoice_id": invoice.String(), "invoice_number": "INV-000001", "customer_id": "cust-42",
		"currency": "EUR", "total_minor": 12000,
	}
	switch typ {
	case shipment.InvoicePaid:
		data["payment_id"] = "pay-1"
	case shipment.InvoiceRefunded:
		data["refund_id"] = "ref-1"
	}
	return map[string]any{
		"id": uuid.NewString(), "type": string(typ), "occurred_at": "2025-03-01T12:00:00Z",
		"sequence": seq, "data": data,
	}
}

// keyOf is the dispatcher's idempotency key of an envelope.
func keyOf(env map[string]any) string {
	data := env["data"].(map[string]any)
	switch env["type"] {
	case string(shipment.InvoicePaid):
		return fmt.Sprintf("invoice.paid:%s:%s", data["invoice_id"], data["payment_id"])
	case string(shipment.InvoiceRefunded):
		return fmt.Sprintf("invoice.refunded:%s:%s", data["invoice_id"], data["refund_id"])
	default:
		return fmt.Sprintf("%s:%s", env["type"], data["invoice_id"])
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// request is a correctly signed delivery of body under key, attempt 1.
func (h harness) request(t *testing.T, key string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhookapi.HeaderIdempotencyKey, key)
	req.Header.Set("X-Attempt", "1")
	req.Header.Set("X-Request-ID", uuid.NewString())
	// The sender signs the key as the webhook-id; a key that cannot be one (the
	// malformed keys some tests send) is signed under another id.
	if err := h.signer.SetHeaders(req.Header, key, time.Now(), body); err != nil {
		require.NoError(t, h.signer.SetHeaders(req.Header, "msg_"+uuid.NewString(), time.Now(), body))
	}
	return req
}

// response is an answer as the tests read it.
type response = logisticstest.Response

// do sends req on a connection of its own.
func do(t *testing.T, req *http.Request) response {
	t.Helper()
	return logisticstest.Do(t, req)
}

// send delivers env under its dispatcher key.
func (h harness) send(t *testing.T, env map[string]any) response {
	t.Helper()
	return do(t, h.request(t, keyOf(env), marshal(t, env)))
}

func requireOK(t *testing.T, r response, want string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.JSONEq(t, want, string(r.Body))
}

// requireProblem checks an error answer's status and problem type.
func requireProblem(t *testing.T, r response, status int, slug string) {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &p))
	require.Equal(t, status, p.Status)
	require.Equal(t, "https://handoff.dev/problems/"+slug, p.Type)
}

// counts are the rows of the logistics tables.
type counts struct{ processed, shipments, history int }

func (h harness) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	err := h.db.NewRaw(`SELECT (SELECT count(*) FROM logistics_processed_events),
		(SELECT count(*) FROM shipments), (SELECT count(*) FROM shipment_history)`).
		Scan(context.Background(), &c.processed, &c.shipments, &c.history)
	require.NoError(t, err)
	return c
}

// shipmentOf returns the state and version of the invoice's shipment.
func (h harness) shipmentOf(t *testing.T, invoice uuid.UUID) (string, int64) {
	t.Helper()
	var state string
	var version int64
	err := h.db.NewRaw(`SELECT state, version FROM shipments WHERE invoice_id = ?`, invoice).
		Scan(context.Background(), &state, &version)
	require.NoError(t, err)
	return state, version
}

// requireShipment checks the state and version of the invoice's shipment.
func (h harness) requireShipment(t *testing.T, invoice uuid.UUID, state string, version int64) {
	t.Helper()
	gotState, gotVersion := h.shipmentOf(t, invoice)
	require.Equal(t, state, gotState)
	require.Equal(t, version, gotVersion)
}
