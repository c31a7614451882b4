package e2e_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// Strict parsing in the real finance binary: a list filter under a wrong name, a
// payment naming amount_minor twice and one naming Payment_ID in the wrong case are
// 400 problems naming the culprit, and nothing is written; spelled correctly, the
// same requests work.
func TestAmbiguousRequestsAreRefused(t *testing.T) {
	t.Parallel()
	env := withoutDispatch(t)
	inv := issue(t, env, "cust-strict")
	payments := env.Finance.URL + "/v1/invoices/" + inv.ID + "/payments"

	cases := []struct {
		name, method, url string
		body              any
		slug, detail      string
	}{
		{"unknown query parameter", http.MethodGet, env.Finance.URL + "/v1/invoices?customer_number=x", nil,
			"unknown-parameter", `unknown query parameter "customer_number"`},
		{"member named twice", http.MethodPost, payments, []byte(`{"payment_id":"pay-1","amount_minor":12000,"amount_minor":1}`),
			"malformed-json", `duplicate member "amount_minor"`},
		{"member in the wrong case", http.MethodPost, payments, []byte(`{"Payment_ID":"pay-1","amount_minor":12000}`),
			"validation-failed", `unknown member "Payment_ID"`},
	}
	for _, c := range cases {
		r := harness.Call(t, c.method, c.url, harness.ClerkToken, c.body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), c.name)
		var p struct{ Type, Detail string }
		r.JSON(t, &p)
		require.Equal(t, "https://handoff.dev/problems/"+c.slug, p.Type, c.name)
		require.Equal(t, c.detail, p.Detail, c.name)
	}
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM payments`))
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox`), "only invoice.issued")
	require.Equal(t, "issued", query[string](t, env.FinanceDB, `SELECT status FROM invoices WHERE id = $1`, inv.ID))

	list := harness.Call(t, http.MethodGet, env.Finance.URL+"/v1/invoices?customer=cust-strict", harness.ClerkToken, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Body))
	var page struct{ Items []invoice }
	list.JSON(t, &page)
	require.Len(t, page.Items, 1)
	r := pay(t, env, inv, "pay-1")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
}
