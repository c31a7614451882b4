package webhookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"handoff/pkg/integrationkit/problem"
)

// FuzzParseEvent feeds arbitrary bodies to the envelope parser. It must never panic;
// a rejection is always a 400 problem; an accepted event is valid UTF-8 without NUL,
// of a known type, with a positive sequence and a SHA-256 hash; and the hash depends
// on the content only, so the same event re-encoded (other whitespace, key order,
// escapes) hashes the same.
func FuzzParseEvent(f *testing.F) {
	for _, seed := range []string{
		`{"id":"6f1c7c1e-8f0a-4d47-9d5e-0c1f7b0a9e11","type":"invoice.paid","occurred_at":"2026-11-29T12:00:00Z","sequence":2,` +
			`"data":{"invoice_id":"0b6f8a52-3a4c-4d8e-8f3e-7a1c2d3e4f50","invoice_number":"INV-000042","customer_id":"cust-42","currency":"EUR","total_minor":12000,"payment_id":"pay-1"}}`,
		`{"id":"x","type":"invoice.refunded","sequence":0,"data":[]}`,
		`{"id":"a\u0000b"}`, `{} {}`, `[]`, `null`, "\xff", `{"sequence":1e400}`, `{"data":{"total_minor":"12"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := parseEvent(body)
		if err != nil {
			var p *problem.Problem
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
				t.Fatalf("rejection is not a 400 problem: %v", err)
			}
			return
		}
		if !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0 || !ev.Type.Valid() || ev.Sequence < 1 || len(ev.Hash) != 32 {
			t.Fatalf("accepted an invalid event: %+v from %q", ev, body)
		}
		again, err := parseEvent(reencode(t, body))
		if err != nil || !bytes.Equal(again.Hash, ev.Hash) {
			t.Fatalf("re-encoded event hashes differently (err %v) from %q", err, body)
		}
	})
}

// reencode decodes body and encodes it again with Go's escaping and key order.
func reencode(t *testing.T, body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("accepted body does not decode: %v", err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	return out
}

// FuzzIdempotencyKey checks the X-Idempotency-Key validator: a key is accepted exactly
// when there is one header value of 1 to 255 printable ASCII bytes, and then it is
// returned unchanged.
func FuzzIdempotencyKey(f *testing.F) {
	for _, seed := range []string{"invoice.paid:inv-1:pay-1", "", "a\x00b", "tab\there", "ünïcode", strings.Repeat("k", 256)} {
		f.Add(seed, false)
	}
	f.Add("invoice.paid:inv-1:pay-1", true)
	f.Fuzz(func(t *testing.T, key string, twice bool) {
		h := http.Header{}
		h.Add(HeaderIdempotencyKey, key)
		if twice {
			h.Add(HeaderIdempotencyKey, key)
		}
		got, err := idempotencyKey(h)
		valid := !twice && key != "" && len(key) <= MaxKeyBytes && printableASCII(key)
		if (err == nil) != valid {
			t.Fatalf("key %q twice=%v: err %v, want valid=%v", key, twice, err, valid)
		}
		if err == nil && got != key {
			t.Fatalf("key %q came back as %q", key, got)
		}
	})
}

func printableASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e })
}
