package harness

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The contract catches each kind of mismatch between an exchange and the document.
func TestContractCatchesMismatches(t *testing.T) {
	t.Parallel()
	c, err := contractOf("finance")
	require.NoError(t, err)
	require.NotNil(t, c)
	get := func(path, token string) *http.Request {
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1"+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req
	}
	answer := func(status int, contentType, body string, headers ...string) Response {
		h := http.Header{"Content-Type": {contentType}}
		for i := 0; i+1 < len(headers); i += 2 {
			h.Set(headers[i], headers[i+1])
		}
		return Response{Status: status, Header: h, Body: []byte(body)}
	}
	unauthorized := answer(http.StatusUnauthorized, "application/problem+json",
		`{"type":"https://handoff.dev/problems/unauthorized","title":"Unauthorized","status":401}`,
		"WWW-Authenticate", "Bearer")

	for _, tc := range []struct {
		name  string
		req   *http.Request
		resp  Response
		wrong bool
	}{
		{"as documented", get("/healthz", ""), answer(200, "application/json", `{"status":"ok"}`), false},
		{"a value outside the schema", get("/healthz", ""), answer(200, "application/json", `{"status":"up"}`), true},
		{"a member the document lacks", get("/healthz", ""), answer(200, "application/json", `{"status":"ok","x":1}`), true},
		{"a status the document lacks", get("/healthz", ""), answer(500, "application/json", `{}`), true},
		{"another media type", get("/healthz", ""), answer(200, "text/plain", `ok`), true},
		{"no operation, and 404", get("/nowhere", ""), answer(404, "application/problem+json", `{}`), false},
		{"no operation, yet 200", get("/nowhere", ""), answer(200, "application/json", `{}`), true},
		{"a refused request refused", get("/v1/invoices", ""), unauthorized, false},
		{"a refused request accepted", get("/v1/invoices", ""), answer(200, "application/json", `{"items":[]}`), true},
		{"an unknown problem type", get("/v1/invoices", ""), answer(401, "application/problem+json",
			`{"type":"https://handoff.dev/problems/nope","title":"Unauthorized","status":401}`, "WWW-Authenticate", "Bearer"), true},
		{"a page as documented", get("/v1/invoices", "tok"), answer(200, "application/json", `{"items":[]}`), false},
	} {
		err := c.check(tc.req, nil, tc.resp)
		if tc.wrong {
			require.Error(t, err, tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
	}
}

// CheckDelivery holds a delivery to the webhook of its event type.
func TestCheckDeliveryHoldsTheEventToItsSchema(t *testing.T) {
	t.Parallel()
	const paid = `{"id":"0193b1f2-7c1e-7a55-9e3b-1f2a3b4c5d6e","type":"invoice.paid","occurred_at":"2030-11-30T13:51:37.123456Z",` +
		`"sequence":2,"data":{"invoice_id":"0193b1f2-7c1e-7a55-9e3b-1f2a3b4c5d6f","invoice_number":"INV-000042",` +
		`"customer_id":"cust-42","currency":"EUR","total_minor":12000,"paid_minor":12000,"status":"paid",` +
		`"payment_id":"pay-1","amount_minor":12000}}`
	deliver := func(body string, without ...string) error {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/webhooks/finance", nil)
		require.NoError(t, err)
		for k, v := range map[string]string{"Content-Type": "application/json", "X-Idempotency-Key": "invoice.paid:x:pay-1",
			"X-Attempt": "1", "X-Request-ID": "r-1", "webhook-id": "invoice.paid:x:pay-1", "webhook-timestamp": "1900000000",
			"webhook-signature": "v1,AAAA"} {
			req.Header.Set(k, v)
		}
		for _, h := range without {
			req.Header.Del(h)
		}
		return CheckDelivery(req, []byte(body))
	}
	require.NoError(t, deliver(paid))
	require.Error(t, deliver(paid, "webhook-signature"), "unsigned")
	require.Error(t, deliver(paid, "X-Idempotency-Key"), "no key")
	require.Error(t, deliver(strings.Replace(paid, `"status":"paid"`, `"status":"issued"`, 1)), "status of another event")
	require.Error(t, deliver(strings.Replace(paid, `"payment_id":"pay-1",`, ``, 1)), "no payment_id")
	require.Error(t, deliver(strings.Replace(paid, `"sequence":2,`, `"sequence":2,"extra":1,`, 1)), "an undocumented member")
	require.Error(t, deliver(strings.Replace(paid, "invoice.paid", "invoice.lost", 1)), "no such webhook")
}
