package webhookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/wire"

	"handoff/logistics/internal/shipment"
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
// when there is one header value of 1 to 255 printable ASCII bytes not starting or
// ending with a space, and then it is returned unchanged.
func FuzzIdempotencyKey(f *testing.F) {
	for _, seed := range []string{"invoice.paid:inv-1:pay-1", "", "a\x00b", "tab\there", "ünïcode", strings.Repeat("k", 256), " padded "} {
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
		valid := !twice && key != "" && len(key) <= 255 && printableASCII(key) && strings.TrimSpace(key) == key
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

// FuzzWireValidEventIsAccepted builds an event the way finance does from input that
// package wire's rules accept, the rules finance checks its clerks' input with, and
// requires both endpoints to accept it with the values it carries: whatever finance
// answers 201 to reaches the shipments, never a 400 dead letter.
func FuzzWireValidEventIsAccepted(f *testing.F) {
	f.Add(uint8(1), "cust-42", "pay-1", int64(12000), int64(2))
	f.Add(uint8(2), strings.Repeat("顧", 85), strings.Repeat("r", wire.MaxKeyIDBytes), int64(wire.MaxMinorUnits), int64(3))
	f.Add(uint8(0), "Müller GmbH & Co. KG", "", int64(1), int64(1))
	f.Add(uint8(1), "c", "Zahlung-Müller", int64(1), int64(2))
	f.Fuzz(func(t *testing.T, kind uint8, customer, ref string, total, seq int64) {
		typ := []shipment.EventType{shipment.InvoiceIssued, shipment.InvoicePaid, shipment.InvoiceRefunded}[kind%3]
		if typ == shipment.InvoiceIssued {
			ref = ""
		}
		if wire.CheckID(customer) != nil || wire.CheckMinorUnits(total) != nil || seq < 1 ||
			(typ != shipment.InvoiceIssued && wire.CheckKeyID(ref) != nil) {
			return
		}
		invoiceID := uuid.New()
		data := map[string]any{
			"invoice_id": invoiceID.String(), "invoice_number": "INV-000042", "customer_id": customer,
			"currency": "EUR", "total_minor": total, "paid_minor": total, "status": "paid",
		}
		key := string(typ) + ":" + invoiceID.String()
		switch typ {
		case shipment.InvoicePaid:
			data["payment_id"], data["amount_minor"], key = ref, total, key+":"+ref
		case shipment.InvoiceRefunded:
			data["refund_id"], data["amount_minor"], key = ref, total, key+":"+ref
		}
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(delivery.Envelope{ID: uuid.NewString(), Type: string(typ),
			OccurredAt: time.Now(), Sequence: seq, Data: raw})
		if err != nil {
			t.Fatal(err)
		}
		if p := checkKey(HeaderIdempotencyKey, key); p != nil {
			t.Fatalf("key %q refused: %v", key, p)
		}
		ev, err := parseEvent(body)
		if err != nil {
			t.Fatalf("event refused: %v\n%s", err, body)
		}
		if ev.Type != typ || ev.InvoiceID != invoiceID || ev.CustomerID != customer || ev.Sequence != seq {
			t.Fatalf("event read as %+v from %s", ev, body)
		}
		item, err := json.Marshal(batchItem{IdempotencyKey: key, Event: body})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := parseItem(item); err != nil {
			t.Fatalf("batch item refused: %v\n%s", err, item)
		}
	})
}
