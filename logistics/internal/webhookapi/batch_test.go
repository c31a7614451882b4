package webhookapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/webhookapi"
)

// batchItem is env as an item of a batch, under the dispatcher's key.
func batchItem(env map[string]any) map[string]any {
	return map[string]any{"idempotency_key": keyOf(env), "attempt": 1, "event": env}
}

// batchBody is a batch request's body holding items.
func batchBody(t testing.TB, items ...any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"items": items})
	require.NoError(t, err)
	return b
}

// batchRequest is a correctly signed batch delivery of body.
func (h harness) batchRequest(t testing.TB, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.batchURL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", uuid.NewString())
	require.NoError(t, h.signer.SetHeaders(req.Header, "msg_"+uuid.NewString(), time.Now(), body))
	return req
}

// answers decodes a 200 batch answer.
func answers(t *testing.T, r response) []webhookapi.ItemAnswer {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var resp webhookapi.BatchResponse
	require.NoError(t, json.Unmarshal(r.Body, &resp))
	return resp.Items
}

// sendBatch delivers items in one batch and returns the answers.
func (h harness) sendBatch(t *testing.T, items ...any) []webhookapi.ItemAnswer {
	t.Helper()
	got := answers(t, do(t, h.batchRequest(t, batchBody(t, items...))))
	require.Len(t, got, len(items))
	return got
}

// ok is the answer of an applied (or duplicate, or stale) item.
func ok(key string, duplicate, stale bool) webhookapi.ItemAnswer {
	return webhookapi.ItemAnswer{IdempotencyKey: key, Status: http.StatusOK, Duplicate: &duplicate, Stale: stale}
}

// requireRefused checks a refused item's answer.
func requireRefused(t *testing.T, a webhookapi.ItemAnswer, key string, status int, slug string) {
	t.Helper()
	require.Equal(t, key, a.IdempotencyKey)
	require.Equal(t, status, a.Status)
	require.Nil(t, a.Duplicate)
	require.NotNil(t, a.Error)
	require.Equal(t, status, a.Error.Status)
	require.Equal(t, "https://handoff.dev/problems/"+slug, a.Error.Type)
}

// paidStream is issued and paid of n invoices: 2n events, each invoice's in order.
func paidStream(n int) (envs []map[string]any, invoices []uuid.UUID) {
	for range n {
		inv := uuid.New()
		invoices = append(invoices, inv)
		envs = append(envs, envelope(shipment.InvoiceIssued, inv, 1), envelope(shipment.InvoicePaid, inv, 2))
	}
	return envs, invoices
}

// concurrently sends every request at the same instant, each on its own connection.
func concurrently(t *testing.T, reqs []*http.Request) []response {
	t.Helper()
	start := make(chan struct{})
	resps := make([]response, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			<-start
			resps[i] = do(t, reqs[i])
		})
	}
	close(start)
	wg.Wait()
	return resps
}

// 24 identical batches of 100 events at the same instant: every event applies once,
// and every request answers each item, as a duplicate where another applied it.
func TestConcurrentIdenticalBatchesApplyEachEventOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	const n = 24
	envs, invoices := paidStream(50)
	items := make([]any, len(envs))
	for i, env := range envs {
		items[i] = batchItem(env)
	}
	body := batchBody(t, items...)
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = h.batchRequest(t, body)
	}

	fresh := map[string]int{}
	for _, r := range concurrently(t, reqs) {
		got := answers(t, r)
		require.Len(t, got, len(envs))
		for i, a := range got {
			require.Equal(t, keyOf(envs[i]), a.IdempotencyKey)
			require.Equal(t, http.StatusOK, a.Status, "%+v", a)
			require.False(t, a.Stale)
			if !*a.Duplicate {
				fresh[a.IdempotencyKey]++
			}
		}
	}
	require.Len(t, fresh, len(envs))
	for key, times := range fresh {
		require.Equal(t, 1, times, key)
	}
	require.Equal(t, counts{processed: 100, shipments: 50, history: 100}, h.counts(t))
	for _, inv := range invoices {
		h.requireShipment(t, inv, "waiting", 2)
	}
}

// Batches holding the same events in different orders race with single deliveries of
// them: keys are claimed in one order whatever the request order, so nothing
// deadlocks and every event is applied exactly once.
func TestConcurrentShuffledBatchesAndSinglesApplyEachEventOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	envs, invoices := paidStream(50)
	var reqs []*http.Request
	for range 12 {
		shuffled := make([]any, len(envs))
		for i, j := range rand.Perm(len(envs)) {
			shuffled[i] = batchItem(envs[j])
		}
		reqs = append(reqs, h.batchRequest(t, batchBody(t, shuffled...)))
		env := envs[rand.IntN(len(envs))]
		reqs = append(reqs, h.request(t, keyOf(env), marshal(t, env)))
	}

	fresh := map[string]int{}
	for i, r := range concurrently(t, reqs) {
		if i%2 == 1 {
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			var ack webhookapi.Ack
			require.NoError(t, json.Unmarshal(r.Body, &ack))
			if !ack.Duplicate {
				fresh[reqs[i].Header.Get(webhookapi.HeaderIdempotencyKey)]++
			}
			continue
		}
		for _, a := range answers(t, r) {
			require.Equal(t, http.StatusOK, a.Status, "%+v", a)
			if !*a.Duplicate {
				fresh[a.IdempotencyKey]++
			}
		}
	}
	require.Len(t, fresh, len(envs))
	for key, times := range fresh {
		require.Equal(t, 1, times, key)
	}
	c := h.counts(t)
	require.Equal(t, 100, c.processed)
	require.Equal(t, 50, c.shipments)
	for _, inv := range invoices {
		state, _ := h.shipmentOf(t, inv)
		require.Equal(t, "waiting", state)
	}
}

// One batch mixing every kind of item answers each as it would be answered alone and
// applies only the fresh ones.
func TestBatchAnswersEachItemOnItsOwn(t *testing.T) {
	t.Parallel()
	h := setup(t)
	invA, invB, invC, invD, invR := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	seen := envelope(shipment.InvoicePaid, invA, 2)
	requireOK(t, h.send(t, seen), applied)
	reused := envelope(shipment.InvoicePaid, invR, 2)
	requireOK(t, h.send(t, reused), applied)
	reused["data"].(map[string]any)["total_minor"] = 99

	fresh := envelope(shipment.InvoicePaid, invB, 2)
	refundC := envelope(shipment.InvoiceRefunded, invC, 3)
	stale := envelope(shipment.InvoiceIssued, invA, 1)
	issuedD, refundD := envelope(shipment.InvoiceIssued, invD, 1), envelope(shipment.InvoiceRefunded, invD, 2)
	unknownType := envelope(shipment.InvoicePaid, uuid.New(), 2)
	unknownType["type"] = "invoice.voided"
	withNUL := envelope(shipment.InvoicePaid, uuid.New(), 2)
	withNUL["data"].(map[string]any)["customer_id"] = "cust\x0042"
	huge := envelope(shipment.InvoicePaid, uuid.New(), 2)
	huge["data"].(map[string]any)["note"] = strings.Repeat("x", webhookapi.MaxBodyBytes)
	otherPayload := envelope(shipment.InvoicePaid, invB, 2)
	otherPayload["data"].(map[string]any)["total_minor"] = 1
	keyed := func(key string, env map[string]any) map[string]any {
		return map[string]any{"idempotency_key": key, "attempt": 1, "event": env}
	}
	long := strings.Repeat("k", 256)

	got := h.sendBatch(t,
		batchItem(fresh), batchItem(seen), batchItem(reused), batchItem(refundC),
		keyed("", envelope(shipment.InvoicePaid, uuid.New(), 2)),
		keyed("invoice.paid:\tx", envelope(shipment.InvoicePaid, uuid.New(), 2)),
		keyed(long, envelope(shipment.InvoicePaid, uuid.New(), 2)),
		batchItem(unknownType), batchItem(withNUL), "not an item", batchItem(huge),
		batchItem(fresh), keyed(keyOf(fresh), otherPayload), batchItem(stale),
		batchItem(refundD), batchItem(issuedD),
	)

	require.Equal(t, ok(keyOf(fresh), false, false), got[0])
	require.Equal(t, ok(keyOf(seen), true, false), got[1])
	requireRefused(t, got[2], keyOf(reused), http.StatusUnprocessableEntity, "idempotency-key-reused")
	requireRefused(t, got[3], keyOf(refundC), http.StatusConflict, "not-yet-applicable")
	require.Equal(t, 5, got[3].RetryAfter)
	requireRefused(t, got[4], "", http.StatusBadRequest, "invalid-idempotency-key")
	requireRefused(t, got[5], "invoice.paid:\tx", http.StatusBadRequest, "invalid-idempotency-key")
	requireRefused(t, got[6], long, http.StatusBadRequest, "invalid-idempotency-key")
	requireRefused(t, got[7], keyOf(unknownType), http.StatusBadRequest, "validation-failed")
	requireRefused(t, got[8], keyOf(withNUL), http.StatusBadRequest, "malformed-event")
	requireRefused(t, got[9], "", http.StatusBadRequest, "malformed-item")
	requireRefused(t, got[10], keyOf(huge), http.StatusRequestEntityTooLarge, "body-too-large")
	require.Equal(t, ok(keyOf(fresh), true, false), got[11], "a key repeated in the batch is a duplicate")
	requireRefused(t, got[12], keyOf(fresh), http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.Equal(t, ok(keyOf(stale), false, true), got[13])
	// The refund comes first in the request but second in the invoice's sequence.
	require.Equal(t, ok(keyOf(refundD), false, false), got[14])
	require.Equal(t, ok(keyOf(issuedD), false, false), got[15])

	require.Equal(t, map[string]string{
		keyOf(seen): "applied", keyOf(reused): "applied", keyOf(fresh): "applied", keyOf(stale): "stale",
		keyOf(issuedD): "applied", keyOf(refundD): "applied",
	}, h.results(t))
	require.Equal(t, counts{processed: 6, shipments: 4, history: 5}, h.counts(t))
	for inv, want := range map[uuid.UUID]string{invA: "waiting", invB: "waiting", invR: "waiting", invD: "cancelled"} {
		state, _ := h.shipmentOf(t, inv)
		require.Equal(t, want, state)
	}

	// Nothing was kept of the refused refund: once the invoice is paid it applies.
	requireOK(t, h.send(t, envelope(shipment.InvoicePaid, invC, 2)), applied)
	require.Equal(t, ok(keyOf(refundC), false, false), h.sendBatch(t, batchItem(refundC))[0])
	state, _ := h.shipmentOf(t, invC)
	require.Equal(t, "cancelled", state)
}

// results maps every processed key to its stored result.
func (h harness) results(t *testing.T) map[string]string {
	t.Helper()
	var rows []struct {
		Key    string `bun:"idempotency_key"`
		Result string `bun:"result"`
	}
	err := h.db.NewRaw(`SELECT idempotency_key, result FROM logistics_processed_events`).Scan(context.Background(), &rows)
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rows {
		out[r.Key] = r.Result
	}
	return out
}

// A request refused as a whole answers as the single endpoint would and stores
// nothing of its (valid) items.
func TestBatchRequestErrorsStoreNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	valid := func() []byte { return batchBody(t, batchItem(envelope(shipment.InvoicePaid, uuid.New(), 2))) }
	tooMany := make([]any, webhookapi.DefaultBatchMaxItems+1)
	for i := range tooMany {
		tooMany[i] = batchItem(envelope(shipment.InvoicePaid, uuid.New(), 2))
	}
	big := append([]byte(`{"items":[],"pad":"`), bytes.Repeat([]byte("x"), webhookapi.MaxBatchBodyBytes)...)
	big = append(big, `"}`...)

	tests := map[string]struct {
		body   []byte
		mutate func(*testing.T, *http.Request, []byte)
		status int
		slug   string
	}{
		"no signature": {valid(), func(_ *testing.T, r *http.Request, _ []byte) { r.Header.Del(webhook.HeaderSignature) },
			http.StatusUnauthorized, "invalid-signature"},
		"body changed after signing": {valid(), func(_ *testing.T, r *http.Request, body []byte) {
			changed := bytes.Replace(body, []byte("12000"), []byte("12001"), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(changed)), int64(len(changed))
		}, http.StatusUnauthorized, "invalid-signature"},
		"six minutes old": {valid(), func(t *testing.T, r *http.Request, body []byte) {
			require.NoError(t, h.signer.SetHeaders(r.Header, "msg_1", time.Now().Add(-6*time.Minute), body))
		}, http.StatusUnauthorized, "invalid-signature"},
		"text/plain": {valid(), func(_ *testing.T, r *http.Request, _ []byte) { r.Header.Set("Content-Type", "text/plain") },
			http.StatusUnsupportedMediaType, "unsupported-media-type"},
		"over 8 MiB, unannounced": {big, func(_ *testing.T, r *http.Request, body []byte) {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), -1
		}, http.StatusRequestEntityTooLarge, "body-too-large"},
		"not JSON":           {[]byte("items"), nil, http.StatusBadRequest, "malformed-batch"},
		"array":              {[]byte(`[` + string(valid()) + `]`), nil, http.StatusBadRequest, "malformed-batch"},
		"two objects":        {append(valid(), valid()...), nil, http.StatusBadRequest, "malformed-batch"},
		"no items":           {[]byte(`{}`), nil, http.StatusBadRequest, "malformed-batch"},
		"items not an array": {[]byte(`{"items":{}}`), nil, http.StatusBadRequest, "malformed-batch"},
		"zero items":         {[]byte(`{"items":[]}`), nil, http.StatusBadRequest, "malformed-batch"},
		"too many items":     {batchBody(t, tooMany...), nil, http.StatusBadRequest, "too-many-items"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			req := h.batchRequest(t, tt.body)
			if tt.mutate != nil {
				tt.mutate(t, req, tt.body)
			}
			requireProblem(t, do(t, req), tt.status, tt.slug)
		})
	}

	// An announced length over the limit is refused before a byte of the body is sent.
	status := rawStatus(t, h.batchURL, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: test\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhookapi.BatchPath, webhookapi.MaxBatchBodyBytes+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)

	require.Equal(t, counts{}, h.counts(t))
}

// An item hashes like the same event delivered alone, whatever its JSON layout, so
// single and batch deliveries of one event deduplicate against each other.
func TestBatchAndSingleDeliveriesDeduplicateEachOther(t *testing.T) {
	t.Parallel()
	h := setup(t)

	first := envelope(shipment.InvoicePaid, uuid.New(), 2)
	requireOK(t, h.send(t, first), applied)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, marshal(t, first), "", "  "))
	body := fmt.Appendf(nil, `{"items": [ {"attempt": 2, "event": %s, "idempotency_key": %q} ]}`, indented.Bytes(), keyOf(first))
	got := answers(t, do(t, h.batchRequest(t, body)))
	require.Equal(t, []webhookapi.ItemAnswer{ok(keyOf(first), true, false)}, got)

	second := envelope(shipment.InvoicePaid, uuid.New(), 2)
	require.Equal(t, ok(keyOf(second), false, false), h.sendBatch(t, batchItem(second))[0])
	requireOK(t, h.send(t, second), duplicate)
	second["data"].(map[string]any)["total_minor"] = 1
	requireProblem(t, h.send(t, second), http.StatusUnprocessableEntity, "idempotency-key-reused")

	require.Equal(t, counts{processed: 2, shipments: 2, history: 2}, h.counts(t))
}

// Several events of one invoice in one batch apply in sequence order, each recorded
// in the shipment's history.
func TestBatchAppliesAnInvoicesEventsInSequence(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inOrder, reversed := uuid.New(), uuid.New()
	got := h.sendBatch(t,
		batchItem(envelope(shipment.InvoiceIssued, inOrder, 1)), batchItem(envelope(shipment.InvoicePaid, inOrder, 2)),
		batchItem(envelope(shipment.InvoicePaid, reversed, 2)), batchItem(envelope(shipment.InvoiceIssued, reversed, 1)),
	)
	for _, a := range got {
		require.Equal(t, ok(a.IdempotencyKey, false, false), a)
	}
	for _, inv := range []uuid.UUID{inOrder, reversed} {
		h.requireShipment(t, inv, "waiting", 2)
		require.Equal(t, []string{" → awaiting_payment (invoice.issued)", "awaiting_payment → waiting (invoice.paid)"},
			h.history(t, inv))
	}
}

// history lists the invoice's shipment history as "from → to (cause)", oldest first.
func (h harness) history(t *testing.T, invoice uuid.UUID) []string {
	t.Helper()
	var out []string
	err := h.db.NewRaw(`SELECT coalesce(h.from_state, '') || ' → ' || h.to_state || ' (' || h.cause || ')'
		FROM shipment_history h JOIN shipments s ON s.id = h.shipment_id
		WHERE s.invoice_id = ? ORDER BY h.id`, invoice).Scan(context.Background(), &out)
	require.NoError(t, err)
	return out
}

// BenchmarkBatchOf100 measures one batch of 100 fresh events (50 invoices, issued and
// paid) through HTTP, a sanity figure beside the benchmark suite's end-to-end rates.
func BenchmarkBatchOf100(b *testing.B) {
	h := setup(b)
	client := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(client.CloseIdleConnections)
	for b.Loop() {
		envs, _ := paidStream(50)
		items := make([]any, len(envs))
		for i, env := range envs {
			items[i] = batchItem(env)
		}
		resp, err := client.Do(h.batchRequest(b, batchBody(b, items...)))
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(b, err)
		require.NoError(b, resp.Body.Close())
		require.Equal(b, http.StatusOK, resp.StatusCode)
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
}
