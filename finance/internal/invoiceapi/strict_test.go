package invoiceapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/financetest"
)

// Each refusal of strict parsing, on a real server: a member named twice at any depth,
// a member matching a field only case-insensitively, an unknown query parameter.
// Nothing is written; the same requests spelled correctly succeed.
func TestStrictParsingRefusesAmbiguousRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := financetest.Serve(t, b.e)
	inv := b.issue(t, "cust-strict", 100)
	before := b.counts(t)
	pay, refund := "/v1/invoices/"+inv.ID+"/payments", "/v1/invoices/"+inv.ID+"/refunds"
	deep := `{"customer_id":"c","currency":"EUR","lines":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`

	financetest.RequireRefusals(t, base, clerkToken, []financetest.Refusal{
		{Name: "unknown query parameter", Method: http.MethodGet, Path: "/v1/invoices?customer_number=cust-strict",
			Slug: "unknown-parameter", Detail: `unknown query parameter "customer_number"`},
		{Name: "query parameter in other case", Method: http.MethodGet, Path: "/v1/invoices?Customer=cust-strict",
			Slug: "unknown-parameter", Detail: `unknown query parameter "Customer"`},
		{Name: "query parameter on one invoice", Method: http.MethodGet, Path: "/v1/invoices/" + inv.ID + "?expand=lines",
			Slug: "unknown-parameter", Detail: `unknown query parameter "expand"`},
		{Name: "query parameter on a POST", Method: http.MethodPost, Path: pay + "?dry_run=1",
			Body: `{"payment_id":"p-1","amount_minor":100}`,
			Slug: "unknown-parameter", Detail: `unknown query parameter "dry_run"`},
		{Name: "malformed query", Method: http.MethodGet, Path: "/v1/invoices?customer=a;b",
			Slug: "malformed-query", Detail: "the query string is malformed: invalid semicolon separator in query"},
		{Name: "duplicate member", Method: http.MethodPost, Path: pay,
			Body: `{"payment_id":"p-1","amount_minor":100,"amount_minor":1}`,
			Slug: "malformed-json", Detail: `duplicate member "amount_minor"`},
		{Name: "duplicate member in a line", Method: http.MethodPost, Path: "/v1/invoices",
			Body: `{"customer_id":"c","currency":"EUR","lines":[{"description":"a","description":"b","quantity":1,"unit_price_minor":1}]}`,
			Slug: "malformed-json", Detail: `duplicate member "description" in lines[0]`},
		{Name: "duplicate member of a refund", Method: http.MethodPost, Path: refund,
			Body: `{"refund_id":"r-1","refund_id":"r-2","reason":"x"}`,
			Slug: "malformed-json", Detail: `duplicate member "refund_id"`},
		{Name: "member in other case", Method: http.MethodPost, Path: pay, Body: `{"Payment_ID":"p-1","amount_minor":100}`,
			Slug: "validation-failed", Detail: `unknown member "Payment_ID"`, Field: "Payment_ID"},
		{Name: "member in other case in a line", Method: http.MethodPost, Path: "/v1/invoices",
			Body: `{"customer_id":"c","currency":"EUR","lines":[{"description":"a","Quantity":1,"unit_price_minor":1}]}`,
			Slug: "validation-failed", Detail: `unknown member "Quantity" in lines[0]`, Field: "lines[0].Quantity"},
		{Name: "nesting deeper than 64", Method: http.MethodPost, Path: "/v1/invoices", Body: deep,
			Slug: "malformed-json", Detail: "nesting deeper than 64 in lines" + strings.Repeat("[0]", 63)},
	})
	require.Equal(t, before, b.counts(t), "nothing written")

	status, _, body := financetest.Call(t, base, clerkToken, http.MethodGet, "/v1/invoices?customer=cust-strict&limit=5", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, inv.ID)
	status, _, body = financetest.Call(t, base, clerkToken, http.MethodPost, pay, `{"payment_id":"p-1","amount_minor":100}`)
	require.Equal(t, http.StatusCreated, status, body)

	status, _, _ = financetest.Call(t, base, "", http.MethodGet, "/v1/invoices?customer_id=x", "")
	require.Equal(t, http.StatusUnauthorized, status, "authentication comes before the query check")
}
