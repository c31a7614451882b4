package idempotency

import (
	"strings"
	"testing"
)

// FuzzParseKey checks the Idempotency-Key validator: a key is accepted exactly when
// there is one header value of 1 to MaxKeyLength printable ASCII bytes, and then it is
// returned unchanged; every rejection is a 400 problem.
func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{"k-1", "", "a\x00b", "line\nbreak", "ünïcode", "\x7f", strings.Repeat("k", MaxKeyLength+1)} {
		f.Add(seed, false)
	}
	f.Add("k-1", true)
	f.Fuzz(func(t *testing.T, key string, twice bool) {
		values := []string{key}
		if twice {
			values = append(values, key)
		}
		got, err := parseKey(values)
		printable := !strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e })
		valid := !twice && key != "" && len(key) <= MaxKeyLength && printable
		if (err == nil) != valid {
			t.Fatalf("key %q twice=%v: err %v, want valid=%v", key, twice, err, valid)
		}
		if err == nil && got != key {
			t.Fatalf("key %q came back as %q", key, got)
		}
		if err != nil && !strings.Contains(err.Error(), "Idempotency-Key") {
			t.Fatalf("rejection does not name the header: %v", err)
		}
	})
}
