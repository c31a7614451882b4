package invoiceapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/httpserver"
)

func TestIssueAnswersTheSpecShape(t *testing.T) {
	t.Parallel()
	b := setup(t)

	rec := b.do(t, http.MethodPost, "/v1/invoices", palletInvoice)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var raw map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
	for _, field := range []string{"id", "number", "status", "currency", "total_minor", "paid_minor",
		"customer_id", "lines", "created_at", "updated_at"} {
		require.Contains(t, raw, field)
	}
	inv := decode[invoiceOut](t, strings.NewReader(rec.Body.String()))
	_, err := uuid.Parse(inv.ID)
	require.NoError(t, err)
	require.Equal(t, "INV-000001", inv.Number)
	require.Equal(t, "issued", inv.Status)
	require.Equal(t, "EUR", inv.Currency)
	require.EqualValues(t, 12000, inv.TotalMinor)
	require.Zero(t, inv.PaidMinor)
	require.Equal(t, "cust-42", inv.CustomerID)
	require.Len(t, inv.Lines, 1)
	require.Equal(t, "Pallet", inv.Lines[0].Description)
	require.EqualValues(t, 2, inv.Lines[0].Quantity)
	require.EqualValues(t, 6000, inv.Lines[0].UnitPriceMinor)
	require.EqualValues(t, 12000, inv.Lines[0].AmountMinor)
	_, err = time.Parse(time.RFC3339Nano, inv.CreatedAt)
	require.NoError(t, err)
	require.Equal(t, "/v1/invoices/"+inv.ID, rec.Header().Get(echo.HeaderLocation))

	got := b.do(t, http.MethodGet, "/v1/invoices/"+inv.ID, "")
	require.Equal(t, http.StatusOK, got.Code)
	require.JSONEq(t, rec.Body.String(), got.Body.String())

	second := b.issue(t, "cust-42", 500)
	require.Equal(t, "INV-000002", second.Number)
	require.NotNil(t, second.Lines, "an invoice without lines lists none, not null")
	require.Empty(t, second.Lines)
}

func TestIssueEmitsIssuedEventWithTheChange(t *testing.T) {
	t.Parallel()
	b := setup(t)

	rec := b.do(t, http.MethodPost, "/v1/invoices", palletInvoice, httpserver.HeaderRequestID, "req-issue-1")
	require.Equal(t, http.StatusCreated, rec.Code)
	inv := decode[invoiceOut](t, rec.Body)

	rows := b.outbox(t, inv.ID)
	require.Len(t, rows, 1)
	ev := rows[0]
	require.Equal(t, invoice.EventIssued, ev.EventType)
	require.Equal(t, "invoice.issued:"+inv.ID, ev.IdempotencyKey)
	require.EqualValues(t, 1, ev.AggregateSeq)
	require.Equal(t, destination, ev.Destination)
	require.Equal(t, "req-issue-1", ev.CorrelationID)
	require.Equal(t, "pending", ev.DeliveryStatus)
	require.JSONEq(t, fmt.Sprintf(`{"invoice_id":%q,"invoice_number":"INV-000001","customer_id":"cust-42",
		"currency":"EUR","total_minor":12000,"paid_minor":0,"status":"issued"}`, inv.ID), string(ev.Payload))
}

func TestIssueRefusesInvalidInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	line := func(q, p string) string {
		return `{"customer_id":"c","currency":"EUR","lines":[{"description":"x","quantity":` + q + `,"unit_price_minor":` + p + `}]}`
	}
	total := func(v string) string { return `{"customer_id":"c","currency":"EUR","total_minor":` + v + `}` }
	manyLines := `{"customer_id":"c","currency":"EUR","lines":[` +
		strings.Repeat(`{"description":"x","quantity":1,"unit_price_minor":1},`, invoice.MaxLines) +
		`{"description":"x","quantity":1,"unit_price_minor":1}]}`

	cases := []struct {
		name, body, slug string
	}{
		{"float quantity", line("2.5", "6000"), "validation-failed"},
		{"float price", line("2", "60.00"), "validation-failed"},
		{"price as string", line("2", `"6000"`), "validation-failed"},
		{"exponent total", total("1e3"), "validation-failed"},
		{"int64 overflow", total("99999999999999999999"), "validation-failed"},
		{"unknown field", `{"customer_id":"c","currency":"EUR","total_minor":1,"discount":5}`, "validation-failed"},
		{"trailing object", total("1") + `{}`, "malformed-json"},
		{"trailing garbage", total("1") + `x`, "malformed-json"},
		{"raw NUL", "{\"customer_id\":\"c\x00\",\"currency\":\"EUR\",\"total_minor\":1}", "malformed-json"},
		{"escaped NUL", `{"customer_id":"c\u0000","currency":"EUR","total_minor":1}`, "validation-failed"},
		{"invalid UTF-8", "{\"customer_id\":\"c\xff\",\"currency\":\"EUR\",\"total_minor\":1}", "malformed-json"},
		{"not an object", `[1]`, "malformed-json"},
		{"empty body", ` `, "malformed-json"},
		{"syntax error", `{"customer_id":`, "malformed-json"},
		{"no customer", `{"currency":"EUR","total_minor":1}`, "validation-failed"},
		{"customer over 255 bytes", `{"customer_id":"` + strings.Repeat("é", 128) + `","currency":"EUR","total_minor":1}`, "validation-failed"},
		{"customer control char", `{"customer_id":"c\n","currency":"EUR","total_minor":1}`, "validation-failed"},
		{"unknown currency", `{"customer_id":"c","currency":"XYZ","total_minor":1}`, "validation-failed"},
		{"lower-case currency", `{"customer_id":"c","currency":"eur","total_minor":1}`, "validation-failed"},
		{"test currency", `{"customer_id":"c","currency":"XTS","total_minor":1}`, "validation-failed"},
		{"zero quantity", line("0", "6000"), "validation-failed"},
		{"negative quantity", line("-1", "6000"), "validation-failed"},
		{"negative price", line("1", "-1"), "validation-failed"},
		{"zero total from lines", line("3", "0"), "validation-failed"},
		{"line over 1e15", line("1000000000", "1000000000"), "validation-failed"},
		{"total over 1e15", `{"customer_id":"c","currency":"EUR","lines":[
			{"description":"a","quantity":1,"unit_price_minor":600000000000000},
			{"description":"b","quantity":1,"unit_price_minor":600000000000000}]}`, "validation-failed"},
		{"zero total", total("0"), "validation-failed"},
		{"total_minor over 1e15", total("1000000000000001"), "validation-failed"},
		{"lines and total", `{"customer_id":"c","currency":"EUR","total_minor":1,"lines":[{"description":"x","quantity":1,"unit_price_minor":1}]}`, "validation-failed"},
		{"neither lines nor total", `{"customer_id":"c","currency":"EUR"}`, "validation-failed"},
		{"no lines", `{"customer_id":"c","currency":"EUR","lines":[]}`, "validation-failed"},
		{"too many lines", manyLines, "validation-failed"},
		{"empty description", `{"customer_id":"c","currency":"EUR","lines":[{"description":"","quantity":1,"unit_price_minor":1}]}`, "validation-failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireProblem(t, b.do(t, http.MethodPost, "/v1/invoices", tc.body), http.StatusBadRequest, tc.slug)
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		rec := b.do(t, http.MethodPost, "/v1/invoices", total("1"), echo.HeaderContentType, "text/plain")
		requireProblem(t, rec, http.StatusUnsupportedMediaType, "unsupported-media-type")
	})
	t.Run("body too large", func(t *testing.T) {
		body := `{"customer_id":"c","currency":"EUR","total_minor":1,"x":"` + strings.Repeat("a", 1<<20) + `"}`
		requireProblem(t, b.do(t, http.MethodPost, "/v1/invoices", body), http.StatusRequestEntityTooLarge, "body-too-large")
	})
	require.Equal(t, counts{}, b.counts(t))
}

func TestValidationProblemNamesTheFields(t *testing.T) {
	t.Parallel()
	b := setup(t)

	rec := b.do(t, http.MethodPost, "/v1/invoices", `{"customer_id":"","currency":"EUR",
		"lines":[{"description":"x","quantity":0,"unit_price_minor":1}]}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	var p struct {
		Errors []struct{ Field string } `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	var fields []string
	for _, e := range p.Errors {
		fields = append(fields, e.Field)
	}
	require.ElementsMatch(t, []string{"customer_id", "lines[0].quantity"}, fields)
}

func TestGetUnknownOrMalformedID(t *testing.T) {
	t.Parallel()
	b := setup(t)

	requireProblem(t, b.do(t, http.MethodGet, "/v1/invoices/"+uuid.NewString(), ""), http.StatusNotFound, "invoice-not-found")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/invoices/not-a-uuid", ""), http.StatusBadRequest, "validation-failed")
}
