package invoiceapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoiceapi"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/problem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	clerkToken  = "clerk-token-0123456789"
	opsToken    = "ops-token-0123456789abc"
	destination = financetest.Destination
)

type bundle struct {
	db *bun.DB
	e  *echo.Echo
}

// setup serves the API exactly as finance wires it, over a fresh database.
func setup(t *testing.T) *bundle {
	t.Helper()
	d := financetest.New(t)
	tokens, err := auth.ParseTokens("clerk:"+clerkToken+",ops:"+opsToken, "clerk", "ops", "warehouse")
	require.NoError(t, err)
	idem, err := idempotency.New(d.DB, idempotency.Config{})
	require.NoError(t, err)
	e := financetest.Echo()
	invoiceapi.Register(e.Group(""), d.Invoices, tokens, idem)
	return &bundle{db: d.DB, e: e}
}

// request builds a clerk's JSON request; header holds extra name, value pairs.
func request(method, path, body string, header ...string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+clerkToken)
	if body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

func (b *bundle) do(t *testing.T, method, path, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, request(method, path, body, header...))
	return rec
}

func decode[T any](t *testing.T, r io.Reader) T {
	t.Helper()
	var v T
	require.NoError(t, json.NewDecoder(r).Decode(&v))
	return v
}

// invoiceOut is the invoice as a client reads it.
type invoiceOut struct {
	ID         string `json:"id"`
	Number     string `json:"number"`
	Status     string `json:"status"`
	Currency   string `json:"currency"`
	TotalMinor int64  `json:"total_minor"`
	PaidMinor  int64  `json:"paid_minor"`
	CustomerID string `json:"customer_id"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
	Lines      []struct {
		Description    string `json:"description"`
		Quantity       int64  `json:"quantity"`
		UnitPriceMinor int64  `json:"unit_price_minor"`
		AmountMinor    int64  `json:"amount_minor"`
	} `json:"lines"`
}

const palletInvoice = `{"customer_id":"cust-42","currency":"EUR",
	"lines":[{"description":"Pallet","quantity":2,"unit_price_minor":6000}]}`

// issue creates an invoice of total for customer and returns it.
func (b *bundle) issue(t *testing.T, customer string, total int64) invoiceOut {
	t.Helper()
	body, err := json.Marshal(map[string]any{"customer_id": customer, "currency": "EUR", "total_minor": total})
	require.NoError(t, err)
	rec := b.do(t, http.MethodPost, "/v1/invoices", string(body))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	return decode[invoiceOut](t, rec.Body)
}

func (b *bundle) pay(t *testing.T, invoiceID, paymentID string, amount int64) *httptest.ResponseRecorder {
	t.Helper()
	body, err := json.Marshal(map[string]any{"payment_id": paymentID, "amount_minor": amount})
	require.NoError(t, err)
	return b.do(t, http.MethodPost, "/v1/invoices/"+invoiceID+"/payments", string(body))
}

func (b *bundle) refund(t *testing.T, invoiceID, refundID string) *httptest.ResponseRecorder {
	t.Helper()
	body, err := json.Marshal(map[string]any{"refund_id": refundID, "reason": "damaged"})
	require.NoError(t, err)
	return b.do(t, http.MethodPost, "/v1/invoices/"+invoiceID+"/refunds", string(body))
}

func requireProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, slug string) {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	require.Equal(t, problem.ContentType, rec.Header().Get(echo.HeaderContentType))
	p := decode[problem.Problem](t, bytes.NewReader(rec.Body.Bytes()))
	require.Equal(t, problem.TypeBase+slug, p.Type, p.Detail)
}

// counts are the rows of every table a request may write.
type counts struct {
	Invoices, Lines, Payments, Refunds, Outbox int
}

func (b *bundle) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	err := b.db.NewRaw(`SELECT (SELECT count(*) FROM invoices), (SELECT count(*) FROM invoice_lines),
		(SELECT count(*) FROM payments), (SELECT count(*) FROM refunds), (SELECT count(*) FROM finance_outbox)`).
		Scan(context.Background(), &c.Invoices, &c.Lines, &c.Payments, &c.Refunds, &c.Outbox)
	require.NoError(t, err)
	return c
}

// outboxRow is a finance_outbox row as the dispatcher will read it.
type outboxRow struct {
	EventType      string          `bun:"event_type"`
	IdempotencyKey string          `bun:"idempotency_key"`
	AggregateKey   string          `bun:"aggregate_key"`
	AggregateSeq   int64           `bun:"aggregate_seq"`
	Destination    string          `bun:"destination"`
	CorrelationID  string          `bun:"correlation_id"`
	DeliveryStatus string          `bun:"delivery_status"`
	Payload        json.RawMessage `bun:"payload,type:jsonb"`
}

func (b *bundle) outbox(t *testing.T, invoiceID string) []outboxRow {
	t.Helper()
	var rows []outboxRow
	err := b.db.NewSelect().TableExpr("finance_outbox").
		Column("event_type", "idempotency_key", "aggregate_key", "aggregate_seq", "destination",
			"correlation_id", "delivery_status", "payload").
		Where("aggregate_key = ?", invoiceID).OrderExpr("aggregate_seq").Scan(context.Background(), &rows)
	require.NoError(t, err)
	return rows
}

func TestRoutesRequireClerk(t *testing.T) {
	t.Parallel()
	b := setup(t)

	req := request(http.MethodGet, "/v1/invoices", "")
	req.Header.Del(echo.HeaderAuthorization)
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	requireProblem(t, rec, http.StatusUnauthorized, "unauthorized")

	rec = b.do(t, http.MethodPost, "/v1/invoices", palletInvoice, echo.HeaderAuthorization, "Bearer "+opsToken)
	requireProblem(t, rec, http.StatusForbidden, "forbidden")
	require.Equal(t, counts{}, b.counts(t))
}
