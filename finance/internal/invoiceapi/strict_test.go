package invoiceapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/problem"
)

// Each refusal of strict parsing, on a real server: a member named twice at any depth,
// a member matching a field only case-insensitively, an unknown query parameter.
// Nothing is written; the same requests spelled correctly succeed.
func TestStrictParsingRefusesAmbiguousRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.e)
	t.Cleanup(srv.Close)
	inv := b.issue(t, "cust-strict", 100)
	before := b.counts(t)
	pay, refund := "/v1/invoices/"+inv.ID+"/payments", "/v1/invoices/"+inv.ID+"/refunds"
	deep := `{"customer_id":"c","currency":"EUR","lines":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`

	tests := []struct {
		name, method, path, body string
		status                   int
		slug, detail, field      string
	}{
		{"unknown query parameter", http.MethodGet, "/v1/invoices?customer_number=cust-strict", "",
			http.StatusBadRequest, "unknown-parameter", `unknown query parameter "customer_number"`, ""},
		{"query parameter in other case", http.MethodGet, "/v1/invoices?Customer=cust-strict", "",
			http.StatusBadRequest, "unknown-parameter", `unknown query parameter "Customer"`, ""},
		{"query parameter on one invoice", http.MethodGet, "/v1/invoices/" + inv.ID + "?expand=lines", "",
			http.StatusBadRequest, "unknown-parameter", `unknown query parameter "expand"`, ""},
		{"query parameter on a POST", http.MethodPost, pay + "?dry_run=1", `{"payment_id":"p-1","amount_minor":100}`,
			http.StatusBadRequest, "unknown-parameter", `unknown query parameter "dry_run"`, ""},
		{"malformed query", http.MethodGet, "/v1/invoices?customer=a;b", "",
			http.StatusBadRequest, "malformed-query", "the query string is malformed: invalid semicolon separator in query", ""},
		{"duplicate member", http.MethodPost, pay, `{"payment_id":"p-1","amount_minor":100,"amount_minor":1}`,
			http.StatusBadRequest, "malformed-json", `duplicate member "amount_minor"`, ""},
		{"duplicate member in a line", http.MethodPost, "/v1/invoices",
			`{"customer_id":"c","currency":"EUR","lines":[{"description":"a","description":"b","quantity":1,"unit_price_minor":1}]}`,
			http.StatusBadRequest, "malformed-json", `duplicate member "description" in lines[0]`, ""},
		{"duplicate member of a refund", http.MethodPost, refund, `{"refund_id":"r-1","refund_id":"r-2","reason":"x"}`,
			http.StatusBadRequest, "malformed-json", `duplicate member "refund_id"`, ""},
		{"member in other case", http.MethodPost, pay, `{"Payment_ID":"p-1","amount_minor":100}`,
			http.StatusBadRequest, "validation-failed", `unknown member "Payment_ID"`, "Payment_ID"},
		{"member in other case in a line", http.MethodPost, "/v1/invoices",
			`{"customer_id":"c","currency":"EUR","lines":[{"description":"a","Quantity":1,"unit_price_minor":1}]}`,
			http.StatusBadRequest, "validation-failed", `unknown member "Quantity" in lines[0]`, "lines[0].Quantity"},
		{"nesting deeper than 64", http.MethodPost, "/v1/invoices", deep,
			http.StatusBadRequest, "malformed-json", "nesting deeper than 64 in lines" + strings.Repeat("[0]", 63), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, header, body := call(t, srv.URL, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, status, body)
			require.Equal(t, problem.ContentType, header.Get(echo.HeaderContentType))
			var p problem.Problem
			require.NoError(t, json.Unmarshal([]byte(body), &p))
			require.Equal(t, problem.TypeBase+tc.slug, p.Type)
			require.Equal(t, tc.detail, p.Detail)
			if tc.field != "" {
				require.Equal(t, []problem.FieldError{{Field: tc.field, Detail: "is not a field of this request"}}, p.Errors)
			}
		})
	}
	require.Equal(t, before, b.counts(t), "nothing written")

	status, _, body := call(t, srv.URL, http.MethodGet, "/v1/invoices?customer=cust-strict&limit=5", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, inv.ID)
	status, _, body = call(t, srv.URL, http.MethodPost, pay, `{"payment_id":"p-1","amount_minor":100}`)
	require.Equal(t, http.StatusCreated, status, body)

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/invoices?customer_id=x", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "authentication comes before the query check")
}

// call makes one clerk's request to the server at base and returns its answer.
func call(t *testing.T, base, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+clerkToken)
	if body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(out)
}
