package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/webhook"
)

// paidEvent builds a signed-ready invoice.paid envelope and its key.
func paidEvent(invoiceID string, seq int) (key string, body []byte) {
	env := map[string]any{
		"id": uuid.NewString(), "type": "invoice.paid", "occurred_at": time.Now().UTC().Format(time.RFC3339Nano),
		"sequence": seq,
		"data": map[string]any{"invoice_id": invoiceID, "invoice_number": "INV-000042", "customer_id": "cust-42",
			"currency": "EUR", "total_minor": 12000, "payment_id": "pay-1"},
	}
	b, _ := json.Marshal(env)
	return "invoice.paid:" + invoiceID + ":pay-1", b
}

// signed returns the headers of a correctly signed webhook request: the key is the
// signed webhook-id, or, for a key that cannot be one, another id.
func signed(key string, body []byte) []string {
	h := http.Header{}
	signer := webhook.NewSigner([][]byte{harness.SecretKey})
	if signer.SetHeaders(h, key, time.Now(), body) != nil {
		_ = signer.SetHeaders(h, "msg_"+strings.ReplaceAll(uuid.NewString(), "-", ""), time.Now(), body)
	}
	return []string{
		"X-Idempotency-Key", key, "X-Attempt", "1",
		webhook.HeaderID, h.Get(webhook.HeaderID), webhook.HeaderTimestamp, h.Get(webhook.HeaderTimestamp),
		webhook.HeaderSignature, h.Get(webhook.HeaderSignature),
	}
}

// webhookTest is a pair whose finance delivers nothing, so the test alone posts to
// logistics' webhook, and an invoice.paid event of a fresh invoice with its key.
type webhookTest struct {
	env       *harness.Env
	url       string // logistics' webhook
	invoiceID string
	key       string
	body      []byte
}

func setupWebhook(t *testing.T) webhookTest {
	t.Helper()
	env := withoutDispatch(t)
	invoiceID := uuid.NewString()
	key, body := paidEvent(invoiceID, 2)
	return webhookTest{env: env, url: env.Logistics.URL + "/webhooks/finance", invoiceID: invoiceID, key: key, body: body}
}

// post sends body to logistics' webhook with the header pairs headers.
func (w webhookTest) post(t *testing.T, body []byte, headers ...string) harness.Response {
	t.Helper()
	return harness.Call(t, http.MethodPost, w.url, "", body, headers...)
}

// A captured signed delivery replayed within the tolerance under a new
// X-Idempotency-Key is 401 and stores nothing; the genuine one still applies once.
func TestReplayUnderANewKeyIs401(t *testing.T) {
	t.Parallel()
	w := setupWebhook(t)
	captured := signed(w.key, w.body)
	forged := slices.Clone(captured)
	forged[1] = "invoice.paid:" + w.invoiceID + ":pay-forged"
	r := w.post(t, w.body, forged...)
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	require.Zero(t, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	r = w.post(t, w.body, captured...)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
}

// 24 identical signed webhooks at the same instant on separate connections: one
// applies, 23 answer duplicate, one processed row, one shipment.
func TestConcurrentIdenticalWebhooksApplyOnce(t *testing.T) {
	t.Parallel()
	w := setupWebhook(t)
	headers := signed(w.key, w.body)
	type answer struct {
		Status    string `json:"status"`
		Duplicate bool   `json:"duplicate"`
	}
	answers := make([]answer, 24)
	codes := make([]int, 24)
	concurrently(t, 24, func(i int) error {
		r, err := harness.Do(http.MethodPost, w.url, "", w.body, headers...)
		if err != nil {
			return err
		}
		codes[i] = r.Status
		if err := json.Unmarshal(r.Body, &answers[i]); err != nil {
			return fmt.Errorf("%d %s: %w", r.Status, r.Body, err)
		}
		return nil
	})
	fresh := 0
	for i := range 24 {
		require.Equal(t, http.StatusOK, codes[i])
		require.Equal(t, "ok", answers[i].Status)
		if !answers[i].Duplicate {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "exactly one answer duplicate:false")
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM shipments WHERE invoice_id = $1 AND state = 'waiting'`, w.invoiceID))
}

// Every bad-input row of the consumer's answers (docs/contract.md) gets its status
// and stores nothing.
func TestBadWebhooksStoreNothing(t *testing.T) {
	t.Parallel()
	w := setupWebhook(t)
	key, body := w.key, w.body

	// One good delivery first, so "same key, different payload" has something to differ from.
	ok := w.post(t, body, signed(key, body)...)
	require.Equal(t, http.StatusOK, ok.Status, string(ok.Body))

	with := func(headers []string, name, value string) []string {
		out := append([]string(nil), headers...)
		for i := 0; i+1 < len(out); i += 2 {
			if strings.EqualFold(out[i], name) {
				out[i+1] = value
				return out
			}
		}
		return append(out, name, value)
	}
	otherKey, otherBody := paidEvent(uuid.NewString(), 2)
	_, resent := paidEvent(w.invoiceID, 2) // same key and fact, new envelope id and time: a duplicate
	changed := bytes.Replace(resent, []byte(`"total_minor":12000`), []byte(`"total_minor":12001`), 1)
	refundBody := bytes.ReplaceAll(otherBody, []byte(`"invoice.paid"`), []byte(`"invoice.refunded"`))
	refundBody = bytes.ReplaceAll(refundBody, []byte(`"payment_id":"pay-1"`), []byte(`"refund_id":"ref-1"`))
	big := bytes.Repeat([]byte(" "), 1<<20+1)
	oldTS := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	cases := []struct {
		name    string
		body    []byte
		headers []string
		status  int
	}{
		{"same key, same fact in a new envelope", resent, signed(key, resent), http.StatusOK},
		{"same key, different payload", changed, signed(key, changed), http.StatusUnprocessableEntity},
		{"missing key", otherBody, with(signed(otherKey, otherBody), "X-Idempotency-Key", ""), http.StatusBadRequest},
		{"key over 255 bytes", otherBody, signed(strings.Repeat("k", 256), otherBody), http.StatusBadRequest},
		{"key with a control character", otherBody, signed("invoice.paid:a\tb", otherBody), http.StatusBadRequest},
		{"key with non-ASCII", otherBody, signed("invoice.paid:é", otherBody), http.StatusBadRequest},
		{"missing signature", otherBody, with(signed(otherKey, otherBody), webhook.HeaderSignature, ""), http.StatusUnauthorized},
		{"bad signature", otherBody, with(signed(otherKey, otherBody), webhook.HeaderSignature, "v1,AAAA"), http.StatusUnauthorized},
		{"timestamp 6 min old", otherBody, with(signed(otherKey, otherBody), webhook.HeaderTimestamp, oldTS), http.StatusUnauthorized},
		// Expect: 100-continue lets the 413 arrive before the body is sent, as a
		// careful client would; without it the client may see the reset instead.
		{"body over 1 MiB", big, append(signed(otherKey, big), "Expect", "100-continue"), http.StatusRequestEntityTooLarge},
		{"not JSON content type", otherBody, append(signed(otherKey, otherBody), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType},
		{"malformed JSON", []byte(`{"id":`), signed(otherKey, []byte(`{"id":`)), http.StatusBadRequest},
		{"NUL byte", []byte(strings.Replace(string(otherBody), "cust-42", "cust\\u000042", 1)), nil, http.StatusBadRequest},
		{"unknown type", bytes.Replace(otherBody, []byte("invoice.paid"), []byte("invoice.lost"), 1), nil, http.StatusBadRequest},
		{"missing fields", []byte(`{"id":"x","type":"invoice.paid"}`), nil, http.StatusBadRequest},
		{"refund before any shipment", refundBody, signed("invoice.refunded:"+uuid.NewString()+":ref-1", refundBody), http.StatusConflict},
	}
	for _, c := range cases {
		headers := c.headers
		if headers == nil {
			headers = signed(otherKey, c.body)
		}
		r := w.post(t, c.body, headers...)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
		if c.status == http.StatusConflict {
			require.NotEmpty(t, r.Header.Get("Retry-After"), c.name)
		}
	}
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM shipments`))
	require.Equal(t, 1, query[int](t, w.env.LogisticsDB, `SELECT count(*) FROM shipment_history`))

	dup := w.post(t, body, signed(key, body)...)
	require.Equal(t, http.StatusOK, dup.Status)
	require.JSONEq(t, `{"status":"ok","duplicate":true}`, string(dup.Body))
}
