package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"handoff/docs/openapi"
	"handoff/e2e/harness"
)

// Each binary serves its document at GET /openapi.json: the YAML of docs/openapi as
// JSON, a valid OpenAPI 3.1 document. (Every other test holds its exchanges to these
// documents through the harness; the services' own tests check that the documents
// list every route.)
func TestOpenAPIDocumentsAreServed(t *testing.T) {
	t.Parallel()
	env := withoutDispatch(t)
	for _, svc := range []struct {
		url string
		doc []byte
	}{{env.Finance.URL, openapi.Finance()}, {env.Logistics.URL, openapi.Logistics()}} {
		r := harness.Call(t, http.MethodGet, svc.url+"/openapi.json", "", nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		served, err := openapi3.NewLoader().LoadFromData(r.Body)
		require.NoError(t, err)
		require.NoError(t, served.Validate(context.Background()))
		require.True(t, served.IsOpenAPI31OrLater())
		want, err := openapi3.NewLoader().LoadFromData(svc.doc)
		require.NoError(t, err)
		wantJSON, err := want.MarshalJSON()
		require.NoError(t, err)
		servedJSON, err := served.MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, string(wantJSON), string(servedJSON), "%s serves docs/openapi", svc.url)
	}
}

// What finance delivers is what the `webhooks` of its document describe: an invoice
// issued, paid and refunded reaches a destination as three events, each request with
// the documented headers and a body of its schema: in single mode an envelope per
// request, in batch mode (the default) batches of envelopes.
func TestOpenAPIWebhooksDescribeWhatFinanceSends(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"single", "batch"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			got := make(chan delivery, 8)
			dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err == nil {
					err = harness.CheckDelivery(r, body)
				}
				if !strings.HasSuffix(r.URL.Path, "/batch") {
					var ev struct {
						Type string `json:"type"`
					}
					_ = jsonUnmarshal(body, &ev)
					got <- delivery{typ: ev.Type, path: r.URL.Path, err: err}
					w.WriteHeader(http.StatusOK)
					return
				}
				var batch struct {
					Items []struct {
						Key   string `json:"idempotency_key"`
						Event struct {
							Type string `json:"type"`
						} `json:"event"`
					} `json:"items"`
				}
				_ = jsonUnmarshal(body, &batch)
				var answer struct {
					Items []map[string]any `json:"items"`
				}
				for _, it := range batch.Items {
					got <- delivery{typ: it.Event.Type, path: r.URL.Path, err: err}
					answer.Items = append(answer.Items, map[string]any{"idempotency_key": it.Key, "status": 200, "duplicate": false})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(answer)
			}))
			t.Cleanup(dest.Close)
			env := harness.New(t, harness.Options{LogisticsURL: dest.URL + "/webhooks/finance",
				FinanceEnv: map[string]string{"DISPATCH_MODE": mode}})

			inv := issue(t, env, "cust-openapi")
			require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-openapi").Status)
			r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/refunds", harness.ClerkToken,
				map[string]any{"refund_id": "ref-openapi", "reason": "damaged"})
			require.Equal(t, http.StatusCreated, r.Status, string(r.Body))

			var types []string
			for range 3 {
				select {
				case d := <-got:
					require.NoError(t, d.err, d.typ)
					require.Equal(t, mode == "batch", strings.HasSuffix(d.path, "/batch"), d.path)
					types = append(types, d.typ)
				case <-time.After(30 * time.Second):
					t.Fatalf("only %v delivered", types)
				}
			}
			require.Equal(t, []string{"invoice.issued", "invoice.paid", "invoice.refunded"}, types)
		})
	}
}

// delivery is one event a destination received, with what is wrong with its request.
type delivery struct {
	typ, path string
	err       error
}
