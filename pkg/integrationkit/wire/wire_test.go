package wire_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/wire"
)

func TestChecks(t *testing.T) {
	t.Parallel()
	type check struct {
		name string
		fn   func(string) error
	}
	key, keyID, id := check{"key", wire.CheckKey}, check{"key id", wire.CheckKeyID}, check{"id", wire.CheckID}
	currency := check{"currency", wire.CheckCurrency}
	tests := []struct {
		check check
		in    string
		want  string // empty: accepted
	}{
		{key, "order.paid:0b6f8a52-3a4c-4d8e-8f3e-7a1c2d3e4f50:p 1", ""},
		{key, strings.Repeat("k", 255), ""},
		{key, strings.Repeat("k", 256), "must be 1 to 255 bytes"},
		{key, "", "must be 1 to 255 bytes"},
		{key, "a\tb", "must be printable ASCII"},
		{key, "a\x7fb", "must be printable ASCII"},
		{key, "Zahlung-Müller", "must be printable ASCII"},
		{key, " k", "must not start or end with a space"},
		{key, "k ", "must not start or end with a space"},
		{keyID, "PAY 2026/0001", ""},
		{keyID, strings.Repeat("p", 128), ""},
		{keyID, strings.Repeat("p", 129), "must be 1 to 128 bytes"},
		{keyID, "réf-1", "must be printable ASCII"},
		{keyID, "pay\x00", "must be printable ASCII"},
		{keyID, "pay-1 ", "must not start or end with a space"},
		{id, "Müller GmbH", ""},
		{id, strings.Repeat("顧", 85), ""}, // 255 bytes
		{id, strings.Repeat("顧", 86), "must be 1 to 255 bytes"},
		{id, strings.Repeat("c", 256), "must be 1 to 255 bytes"},
		{id, "", "must be 1 to 255 bytes"},
		{id, "c\xff", "must be valid UTF-8"},
		{id, " c", "must not start or end with a space"},
		{id, "c\u00a0", "must contain printable characters only"},
		{id, "c\u200bd", "must contain printable characters only"},
		{id, "c\u0085d", "must contain printable characters only"},
		{id, "c\nd", "must contain printable characters only"},
		{currency, "EUR", ""},
		{currency, "eur", "must be an ISO 4217 code such as EUR"},
		{currency, "EURO", "must be an ISO 4217 code such as EUR"},
		{currency, "É€", "must be an ISO 4217 code such as EUR"},
	}
	for _, tt := range tests {
		t.Run(tt.check.name+" "+tt.in, func(t *testing.T) {
			t.Parallel()
			err := tt.check.fn(tt.in)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestCheckMinorUnits(t *testing.T) {
	t.Parallel()
	for n, ok := range map[int64]bool{0: true, 1: true, wire.MaxMinorUnits: true, -1: false, wire.MaxMinorUnits + 1: false} {
		require.Equal(t, ok, wire.CheckMinorUnits(n) == nil, n)
	}
	require.Equal(t, float64(wire.MaxMinorUnits), float64(wire.MaxMinorUnits-1)+1, "exact as a float64")
}

// FuzzContract checks the promises between the checks: an identifier fit for a key
// is fit as data too and, behind a name of up to MaxKeyNameBytes and a UUID, makes a
// key; an accepted key survives an HTTP header and an accepted identifier a JSON
// string unchanged.
func FuzzContract(f *testing.F) {
	f.Add("order.paid", "pay-1")
	f.Add(strings.Repeat("n", wire.MaxKeyNameBytes), strings.Repeat("p", wire.MaxKeyIDBytes))
	f.Add("a b", "Zahlung-Müller")
	f.Add("x", " p")
	f.Add("", "顧客")
	f.Fuzz(func(t *testing.T, name, id string) {
		if wire.CheckKeyID(id) == nil {
			if err := wire.CheckID(id); err != nil {
				t.Fatalf("key id %q is no id: %v", id, err)
			}
			if wire.CheckKey(name) == nil && len(name) <= wire.MaxKeyNameBytes {
				key := name + ":0b6f8a52-3a4c-4d8e-8f3e-7a1c2d3e4f50:" + id
				if err := wire.CheckKey(key); err != nil {
					t.Fatalf("key %q: %v", key, err)
				}
			}
		}
		for _, k := range []string{name, id} {
			if wire.CheckKey(k) == nil {
				if got := throughHeader(t, k); got != k {
					t.Fatalf("key %q came through a header as %q", k, got)
				}
			}
			if wire.CheckID(k) == nil {
				if got := throughJSON(t, k); got != k {
					t.Fatalf("id %q came through JSON as %q", k, got)
				}
			}
		}
	})
}

func throughHeader(t *testing.T, key string) string {
	raw := "POST / HTTP/1.1\r\nHost: x\r\nX-Idempotency-Key: " + key + "\r\nContent-Length: 0\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	return req.Header.Get("X-Idempotency-Key")
}

func throughJSON(t *testing.T, s string) string {
	b, err := json.Marshal(map[string]string{"id": s})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out["id"]
}
