package webhookapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/shipment"
	"handoff/logistics/internal/webhookapi"
)

const (
	applied   = `{"status":"ok","duplicate":false}`
	duplicate = `{"status":"ok","duplicate":true}`
)

func TestNewEventIsApplied(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inv := uuid.New()

	requireOK(t, h.send(t, envelope(shipment.InvoicePaid, inv, 2)), applied)

	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
	h.requireShipment(t, inv, "waiting", 1)
	var result, eventType string
	err := h.db.NewRaw(`SELECT result, event_type FROM logistics_processed_events WHERE invoice_id = ?`, inv).
		Scan(context.Background(), &result, &eventType)
	require.NoError(t, err)
	require.Equal(t, "applied", result)
	require.Equal(t, "invoice.paid", eventType)
}

func TestIssuedThenPaidMovesTheShipment(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inv := uuid.New()

	requireOK(t, h.send(t, envelope(shipment.InvoiceIssued, inv, 1)), applied)
	state, _ := h.shipmentOf(t, inv)
	require.Equal(t, "awaiting_payment", state)

	requireOK(t, h.send(t, envelope(shipment.InvoicePaid, inv, 2)), applied)
	h.requireShipment(t, inv, "waiting", 2)
	require.Equal(t, counts{processed: 2, shipments: 1, history: 2}, h.counts(t))
}

// A retry is a new request (attempt, webhook id, timestamp, even the JSON layout may
// differ) carrying the same key and event: it is a duplicate.
func TestRetryOfTheSameEventIsADuplicate(t *testing.T) {
	t.Parallel()
	h := setup(t)
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	requireOK(t, h.send(t, env), applied)
	before := h.counts(t)

	compact := marshal(t, env)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, compact, "", "  "))
	for attempt, body := range [][]byte{compact, indented.Bytes()} {
		req := h.request(t, keyOf(env), body)
		req.Header.Set("X-Attempt", string(rune('2'+attempt)))
		requireOK(t, do(t, req), duplicate)
	}
	require.Equal(t, before, h.counts(t))
}

// 24 identical deliveries at the same instant, each on its own connection: one
// applies, 23 answer duplicate, none 409 or 500.
func TestConcurrentIdenticalWebhooksApplyOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	const n = 24
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	body := marshal(t, env)

	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = h.request(t, keyOf(env), body)
	}
	resps := concurrently(t, reqs)

	answers := map[string]int{}
	for _, r := range resps {
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var ack webhookapi.Ack
		require.NoError(t, json.Unmarshal(r.Body, &ack))
		answers[string(marshal(t, ack))]++
	}
	require.Equal(t, map[string]int{applied: 1, duplicate: n - 1}, answers)
	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
}

func TestSameKeyDifferentPayloadIs422(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inv := uuid.New()
	env := envelope(shipment.InvoicePaid, inv, 2)
	requireOK(t, h.send(t, env), applied)

	env["data"].(map[string]any)["total_minor"] = 99
	requireProblem(t, h.send(t, env), http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.Equal(t, counts{processed: 1, shipments: 1, history: 1}, h.counts(t))
	_, version := h.shipmentOf(t, inv)
	require.EqualValues(t, 1, version)
}

func TestBadIdempotencyKeyIs400(t *testing.T) {
	t.Parallel()
	h := setup(t)
	tests := map[string]func(http.Header){
		"missing":    func(hd http.Header) { hd.Del(webhookapi.HeaderIdempotencyKey) },
		"empty":      func(hd http.Header) { hd.Set(webhookapi.HeaderIdempotencyKey, "") },
		"256 bytes":  func(hd http.Header) { hd.Set(webhookapi.HeaderIdempotencyKey, strings.Repeat("k", 256)) },
		"tab":        func(hd http.Header) { hd.Set(webhookapi.HeaderIdempotencyKey, "invoice.paid:\tx") },
		"non-ASCII":  func(hd http.Header) { hd.Set(webhookapi.HeaderIdempotencyKey, "invoice.paid:é") },
		"two values": func(hd http.Header) { hd.Add(webhookapi.HeaderIdempotencyKey, "other") },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			env := envelope(shipment.InvoicePaid, uuid.New(), 2)
			req := h.request(t, keyOf(env), marshal(t, env))
			mutate(req.Header)
			requireProblem(t, do(t, req), http.StatusBadRequest, "invalid-idempotency-key")
		})
	}
	require.Equal(t, counts{}, h.counts(t))

	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	requireOK(t, do(t, h.request(t, strings.Repeat("k", 255), marshal(t, env))), applied)
}

func TestSignatureProblemsAre401(t *testing.T) {
	t.Parallel()
	h := setup(t)
	other, err := webhook.ParseSecrets(webhook.FormatSecret([]byte("another-secret-of-32-bytes-long!")))
	require.NoError(t, err)
	tests := map[string]func(*testing.T, *http.Request, []byte){
		"no signature headers": func(_ *testing.T, r *http.Request, _ []byte) {
			r.Header.Del(webhook.HeaderID)
			r.Header.Del(webhook.HeaderTimestamp)
			r.Header.Del(webhook.HeaderSignature)
		},
		"no signature": func(_ *testing.T, r *http.Request, _ []byte) { r.Header.Del(webhook.HeaderSignature) },
		"other secret": func(t *testing.T, r *http.Request, body []byte) {
			require.NoError(t, webhook.NewSigner(other).SetHeaders(r.Header, "msg_1", time.Now(), body))
		},
		"garbage signature": func(_ *testing.T, r *http.Request, _ []byte) {
			r.Header.Set(webhook.HeaderSignature, "v1,not-base64!!")
		},
		"body changed after signing": func(t *testing.T, r *http.Request, body []byte) {
			changed := bytes.Replace(body, []byte("12000"), []byte("12001"), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(changed)), int64(len(changed))
		},
		"six minutes old": func(t *testing.T, r *http.Request, body []byte) {
			require.NoError(t, h.signer.SetHeaders(r.Header, "msg_1", time.Now().Add(-6*time.Minute), body))
		},
		"six minutes ahead": func(t *testing.T, r *http.Request, body []byte) {
			require.NoError(t, h.signer.SetHeaders(r.Header, "msg_1", time.Now().Add(6*time.Minute), body))
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			env := envelope(shipment.InvoicePaid, uuid.New(), 2)
			body := marshal(t, env)
			req := h.request(t, keyOf(env), body)
			mutate(t, req, body)
			requireProblem(t, do(t, req), http.StatusUnauthorized, "invalid-signature")
		})
	}
	require.Equal(t, counts{}, h.counts(t))
}

// The key is signed as the webhook-id: a captured delivery replayed within the
// tolerance under another X-Idempotency-Key (or signed under another id) is 401 and
// stores nothing; the genuine delivery still applies once.
func TestKeyOtherThanTheSignedIDIs401(t *testing.T) {
	t.Parallel()
	h := setup(t)
	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	body := marshal(t, env)
	captured := h.request(t, keyOf(env), body)

	replayed := h.request(t, "invoice.paid:"+uuid.NewString()+":forged", body)
	for _, name := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
		replayed.Header.Set(name, captured.Header.Get(name))
	}
	requireProblem(t, do(t, replayed), http.StatusUnauthorized, "idempotency-key-not-signed")
	otherID := h.request(t, keyOf(env), body)
	require.NoError(t, h.signer.SetHeaders(otherID.Header, "msg_1", time.Now(), body))
	requireProblem(t, do(t, otherID), http.StatusUnauthorized, "idempotency-key-not-signed")
	require.Equal(t, counts{}, h.counts(t))

	requireOK(t, do(t, captured), applied)
}

func TestBodyOver1MiBIs413(t *testing.T) {
	t.Parallel()
	h := setup(t)
	big := append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), webhookapi.MaxBodyBytes)...)
	big = append(big, `"}`...)

	// Without a Content-Length the server reads up to the limit, then refuses.
	chunked := h.request(t, "k-chunked", big)
	chunked.Body, chunked.ContentLength = io.NopCloser(bytes.NewReader(big)), -1
	requireProblem(t, do(t, chunked), http.StatusRequestEntityTooLarge, "body-too-large")

	// An announced length over the limit is refused before a byte of the body is sent.
	status := rawStatus(t, h.url, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: test\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhookapi.Path, webhookapi.MaxBodyBytes+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)

	require.Equal(t, counts{}, h.counts(t))
}

// rawStatus writes head to the server of rawURL and returns the status it answers.
func rawStatus(t *testing.T, rawURL, head string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

func TestContentTypeMustBeJSON(t *testing.T) {
	t.Parallel()
	h := setup(t)
	for _, ct := range []string{"", "text/plain", "application/jsonx", "application/json; charset=iso-8859-1",
		"application/json; boundary=x", "application/x-www-form-urlencoded", "json"} {
		t.Run(ct, func(t *testing.T) {
			env := envelope(shipment.InvoicePaid, uuid.New(), 2)
			req := h.request(t, keyOf(env), marshal(t, env))
			req.Header.Set("Content-Type", ct)
			requireProblem(t, do(t, req), http.StatusUnsupportedMediaType, "unsupported-media-type")
		})
	}
	require.Equal(t, counts{}, h.counts(t))

	env := envelope(shipment.InvoicePaid, uuid.New(), 2)
	req := h.request(t, keyOf(env), marshal(t, env))
	req.Header.Set("Content-Type", "application/json; charset=UTF-8")
	requireOK(t, do(t, req), applied)
}

func TestMalformedEventsAre400(t *testing.T) {
	t.Parallel()
	h := setup(t)
	valid := func() map[string]any { return envelope(shipment.InvoicePaid, uuid.New(), 2) }
	with := func(mutate func(env, data map[string]any)) []byte {
		env := valid()
		mutate(env, env["data"].(map[string]any))
		return marshal(t, env)
	}
	raw := string(marshal(t, valid()))
	tests := map[string][]byte{
		"empty body":          nil,
		"not JSON":            []byte("hello"),
		"truncated":           []byte(raw[:len(raw)-1]),
		"trailing garbage":    []byte(raw + "x"),
		"two objects":         []byte(raw + raw),
		"array":               []byte("[" + raw + "]"),
		"null":                []byte("null"),
		"NUL byte":            []byte(strings.Replace(raw, "cust-42", "cust\x0042", 1)),
		"escaped NUL":         []byte(strings.Replace(raw, "cust-42", `cust\u000042`, 1)),
		"escaped NUL in key":  []byte(strings.Replace(raw, `"currency"`, `"curr\u0000ency":"x","currency"`, 1)),
		"invalid UTF-8":       []byte(strings.Replace(raw, "cust-42", "cust\xff42", 1)),
		"unknown type":        with(func(env, _ map[string]any) { env["type"] = "invoice.voided" }),
		"missing type":        with(func(env, _ map[string]any) { delete(env, "type") }),
		"bad event id":        with(func(env, _ map[string]any) { env["id"] = "evt-1" }),
		"missing occurred_at": with(func(env, _ map[string]any) { delete(env, "occurred_at") }),
		"bad occurred_at":     with(func(env, _ map[string]any) { env["occurred_at"] = "yesterday" }),
		"missing sequence":    with(func(env, _ map[string]any) { delete(env, "sequence") }),
		"sequence 0":          with(func(env, _ map[string]any) { env["sequence"] = 0 }),
		"negative sequence":   with(func(env, _ map[string]any) { env["sequence"] = -1 }),
		"fractional sequence": with(func(env, _ map[string]any) { env["sequence"] = 1.5 }),
		"string sequence":     with(func(env, _ map[string]any) { env["sequence"] = "2" }),
		"missing data":        with(func(env, _ map[string]any) { delete(env, "data") }),
		"data not an object":  with(func(env, _ map[string]any) { env["data"] = []int{1} }),
		"bad invoice id":      with(func(_, data map[string]any) { data["invoice_id"] = "42" }),
		"missing invoice id":  with(func(_, data map[string]any) { delete(data, "invoice_id") }),
		"missing number":      with(func(_, data map[string]any) { delete(data, "invoice_number") }),
		"missing customer":    with(func(_, data map[string]any) { delete(data, "customer_id") }),
		"bad currency":        with(func(_, data map[string]any) { data["currency"] = "euro" }),
		"missing total":       with(func(_, data map[string]any) { delete(data, "total_minor") }),
		"float total":         with(func(_, data map[string]any) { data["total_minor"] = 120.5 }),
		"paid without id":     with(func(_, data map[string]any) { delete(data, "payment_id") }),
		"control character":   with(func(_, data map[string]any) { data["customer_id"] = "cust\n42" }),
		"overlong customer":   with(func(_, data map[string]any) { data["customer_id"] = strings.Repeat("c", 256) }),
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			r := do(t, h.request(t, "invoice.paid:"+name, body))
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
			require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
		})
	}
	require.Equal(t, counts{}, h.counts(t))
}

func TestRefundBeforeTheShipmentExistsIs409(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inv := uuid.New()
	refund := envelope(shipment.InvoiceRefunded, inv, 3)

	r := h.send(t, refund)
	requireProblem(t, r, http.StatusConflict, "not-yet-applicable")
	require.Equal(t, "5", r.Header.Get("Retry-After"))
	require.Equal(t, counts{}, h.counts(t))

	requireOK(t, h.send(t, envelope(shipment.InvoicePaid, inv, 2)), applied)
	requireOK(t, h.send(t, refund), applied)
	h.requireShipment(t, inv, "cancelled", 2)
}

func TestStaleEventIsRecordedAndChangesNothing(t *testing.T) {
	t.Parallel()
	h := setup(t)
	inv := uuid.New()
	requireOK(t, h.send(t, envelope(shipment.InvoicePaid, inv, 2)), applied)
	before := h.counts(t)

	issued := envelope(shipment.InvoiceIssued, inv, 1)
	requireOK(t, h.send(t, issued), `{"status":"ok","duplicate":false,"stale":true}`)
	requireOK(t, h.send(t, issued), `{"status":"ok","duplicate":true,"stale":true}`)

	require.Equal(t, counts{processed: before.processed + 1, shipments: 1, history: before.history}, h.counts(t))
	h.requireShipment(t, inv, "waiting", 1)
	var result string
	err := h.db.NewRaw(`SELECT result FROM logistics_processed_events WHERE idempotency_key = ?`, keyOf(issued)).
		Scan(context.Background(), &result)
	require.NoError(t, err)
	require.Equal(t, "stale", result)
}

// When a request has several faults, the answer is the first in the contract's order:
// size, media type, signature, key, event.
func TestChecksRunInContractOrder(t *testing.T) {
	t.Parallel()
	h := setup(t)
	big := bytes.Repeat([]byte("x"), webhookapi.MaxBodyBytes+1)

	r := h.request(t, "", big)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(big)), -1
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Del(webhook.HeaderSignature)
	requireProblem(t, do(t, r), http.StatusRequestEntityTooLarge, "body-too-large")

	r = h.request(t, "", []byte("not json"))
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Del(webhook.HeaderSignature)
	requireProblem(t, do(t, r), http.StatusUnsupportedMediaType, "unsupported-media-type")

	r = h.request(t, "", []byte("not json"))
	r.Header.Del(webhook.HeaderSignature)
	requireProblem(t, do(t, r), http.StatusUnauthorized, "invalid-signature")

	r = h.request(t, "", []byte("not json"))
	requireProblem(t, do(t, r), http.StatusBadRequest, "invalid-idempotency-key")

	require.Equal(t, counts{}, h.counts(t))
}
