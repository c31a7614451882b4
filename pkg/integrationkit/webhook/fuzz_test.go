package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"handoff/pkg/integrationkit/webhook"
)

// FuzzVerify feeds arbitrary headers and bodies to the verifier and checks it against
// an oracle: a request is accepted exactly when all three headers are present, the
// timestamp is a decimal within ±5 minutes and one v1 signature decodes to the HMAC of
// "id.timestamp.body". A request signed by the Signer always verifies.
func FuzzVerify(f *testing.F) {
	h := signed(now, body, current)
	f.Add(h.Get(webhook.HeaderID), h.Get(webhook.HeaderTimestamp), h.Get(webhook.HeaderSignature), body)
	f.Add("msg_1", strconv.FormatInt(now.Unix()-301, 10), h.Get(webhook.HeaderSignature), body)
	f.Add("msg_1", "+"+strconv.FormatInt(now.Unix(), 10), "v1,AAAA v2,BBBB", []byte("{}"))
	f.Add("", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, id, ts, sigs string, b []byte) {
		v := verifier(current)
		header := http.Header{}
		header.Set(webhook.HeaderID, id)
		header.Set(webhook.HeaderTimestamp, ts)
		header.Set(webhook.HeaderSignature, sigs)
		err := v.Verify(header, b)
		if want := oracle(header, b); (err == nil) != want {
			t.Fatalf("Verify(id=%q ts=%q sigs=%q) = %v, oracle says accepted=%v", id, ts, sigs, err, want)
		}
		if id != "" && !strings.ContainsAny(id, "\r\n") {
			if err := v.Verify(signed(now, b, current), b); err != nil {
				t.Fatalf("a signed body does not verify: %v", err)
			}
		}
	})
}

func oracle(h http.Header, b []byte) bool {
	id, tsRaw, sigs := h.Get(webhook.HeaderID), h.Get(webhook.HeaderTimestamp), h.Get(webhook.HeaderSignature)
	if id == "" || tsRaw == "" || sigs == "" {
		return false
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil || ts < now.Unix()-300 || ts > now.Unix()+300 {
		return false
	}
	m := hmac.New(sha256.New, current)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(b)
	want := m.Sum(nil)
	for sig := range strings.FieldsSeq(sigs) {
		raw, ok := strings.CutPrefix(sig, "v1,")
		got, err := base64.StdEncoding.DecodeString(raw)
		if ok && err == nil && bytes.Equal(got, want) {
			return true
		}
	}
	return false
}
