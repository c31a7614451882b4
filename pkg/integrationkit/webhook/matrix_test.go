package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/webhook"
)

// The signer refuses an id that is empty or not printable ASCII, and sets no header
// then; the timestamp is always whole seconds.
func TestSignerRefusesAnInvalidID(t *testing.T) {
	t.Parallel()
	signer := webhook.NewSigner([][]byte{current})
	for _, id := range []string{"", "msg\n1", "msg\x001", "méssage", "msg\x7f"} {
		t.Run(strconv.Quote(id), func(t *testing.T) {
			t.Parallel()
			_, err := signer.Sign(id, now, body)
			require.ErrorIs(t, err, webhook.ErrInvalidID)
			h := http.Header{}
			require.ErrorIs(t, signer.SetHeaders(h, id, now, body), webhook.ErrInvalidID)
			require.Empty(t, h, "a refused message gets no header")
		})
	}
	digits := regexp.MustCompile(`^-?[0-9]+$`)
	for _, ts := range []time.Time{now.Add(999 * time.Millisecond), now.Add(time.Nanosecond), time.Unix(-1, 500)} {
		h := http.Header{}
		require.NoError(t, signer.SetHeaders(h, "msg_1", ts, body))
		require.Regexp(t, digits, h.Get(webhook.HeaderTimestamp), "whole seconds only")
	}
}

// An id holding '.' (an idempotency key such as "invoice.paid:…") signs and verifies,
// and the signed content "id.timestamp.body" cannot be split another way into a
// request a JSON receiver accepts: every other split that verifies leaves a body that
// is not a JSON object.
func TestADottedIDCannotBeSplitAnotherWay(t *testing.T) {
	t.Parallel()
	signer := webhook.NewSigner([][]byte{current})
	verifier := webhook.NewVerifier([][]byte{current}).WithClock(func() time.Time { return now })
	id := "invoice.paid:0193b1f2-7c1e-7a55-9e3b-1f2a3b4c5d6e:pay.2024.11"
	payload := []byte(`{"id":"0193b1f2","type":"invoice.paid","occurred_at":"2026-11-30T13:51:37.123456Z","sequence":2,"data":{"amount_minor":1.5e3}}`)
	h := http.Header{}
	require.NoError(t, signer.SetHeaders(h, id, now, payload))
	require.NoError(t, verifier.Verify(h, payload))

	signed := []byte(id + "." + h.Get(webhook.HeaderTimestamp) + "." + string(payload))
	for i := range signed {
		if signed[i] != '.' || i == len(id) {
			continue
		}
		j := bytes.IndexByte(signed[i+1:], '.')
		if j < 0 {
			continue
		}
		otherID, otherTS, otherBody := string(signed[:i]), string(signed[i+1:i+1+j]), signed[i+2+j:]
		forged := http.Header{}
		forged.Set(webhook.HeaderID, otherID)
		forged.Set(webhook.HeaderTimestamp, otherTS)
		forged.Set(webhook.HeaderSignature, h.Get(webhook.HeaderSignature))
		if verifier.Verify(forged, otherBody) != nil {
			continue
		}
		var obj map[string]json.RawMessage
		require.Error(t, json.Unmarshal(otherBody, &obj), "split at %d verifies and leaves a JSON object: %q", i, otherBody)
	}
}
