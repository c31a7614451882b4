package webhook_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/webhook"
)

var (
	current = []byte("current-secret-0123456789abcdef")
	retired = []byte("retired-secret-0123456789abcdef")
	now     = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	body    = []byte(`{"id":"e1","type":"invoice.paid","data":{"total_minor":12000}}`)
)

func verifier(keys ...[]byte) *webhook.Verifier {
	return webhook.NewVerifier(keys).WithClock(func() time.Time { return now })
}

// signed returns the headers of body signed at ts with keys. SetHeaders refuses only
// an invalid id, which "msg_1" is not, so an error is a broken test: it panics.
func signed(ts time.Time, b []byte, keys ...[]byte) http.Header {
	h := http.Header{}
	if err := webhook.NewSigner(keys).SetHeaders(h, "msg_1", ts, b); err != nil {
		panic(err)
	}
	return h
}

func TestSignedRequestsVerify(t *testing.T) {
	t.Parallel()
	h := signed(now, body, current)
	require.Equal(t, "msg_1", h.Get(webhook.HeaderID))
	require.Equal(t, strconv.FormatInt(now.Unix(), 10), h.Get(webhook.HeaderTimestamp))
	require.True(t, strings.HasPrefix(h.Get(webhook.HeaderSignature), "v1,"))
	require.NoError(t, verifier(current).Verify(h, body))
}

// The signature covers the raw bytes: the same JSON re-encoded (other whitespace, other
// key order) no longer verifies, and neither does another id or timestamp.
func TestVerificationUsesTheRawBytes(t *testing.T) {
	t.Parallel()
	h := signed(now, body, current)
	reencoded := []byte(`{"id": "e1", "type": "invoice.paid", "data": {"total_minor": 12000}}`)
	require.ErrorIs(t, verifier(current).Verify(h, reencoded), webhook.ErrNoMatch)
	require.ErrorIs(t, verifier(current).Verify(h, append(bytes.Clone(body), '\n')), webhook.ErrNoMatch)

	otherID := h.Clone()
	otherID.Set(webhook.HeaderID, "msg_2")
	require.ErrorIs(t, verifier(current).Verify(otherID, body), webhook.ErrNoMatch)
	otherTS := h.Clone()
	otherTS.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix()+1, 10))
	require.ErrorIs(t, verifier(current).Verify(otherTS, body), webhook.ErrNoMatch)
}

// During a rotation the sender signs with both secrets and the receiver accepts either:
// one valid signature among three is enough.
func TestRotation(t *testing.T) {
	t.Parallel()
	both := signed(now, body, current, retired)
	require.Len(t, strings.Fields(both.Get(webhook.HeaderSignature)), 2, "one signature per active secret")
	require.NoError(t, verifier(current).Verify(both, body), "receiver already rotated")
	require.NoError(t, verifier(retired).Verify(both, body), "receiver not rotated yet")
	require.NoError(t, verifier(current, retired).Verify(signed(now, body, retired), body), "sender not rotated yet")

	good := signed(now, body, current).Get(webhook.HeaderSignature)
	junk := "v1," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	h := signed(now, body, current)
	h.Set(webhook.HeaderSignature, junk+" "+good+" v1,bm90LWEtc2lnbmF0dXJl")
	require.NoError(t, verifier(current).Verify(h, body), "one valid of three")
	h.Set(webhook.HeaderSignature, junk+" v1,bm90LWEtc2lnbmF0dXJl")
	require.ErrorIs(t, verifier(current).Verify(h, body), webhook.ErrNoMatch)
}

func TestMalformedSignaturesAreRejected(t *testing.T) {
	t.Parallel()
	good := signed(now, body, current).Get(webhook.HeaderSignature)
	raw := strings.TrimPrefix(good, "v1,")
	cases := map[string]string{
		"wrong version":        "v2," + raw,
		"no version":           raw,
		"no comma":             "v1" + raw,
		"truncated base64":     "v1," + raw[:len(raw)-4],
		"truncated mid-quad":   "v1," + raw[:len(raw)-1],
		"raw URL base64":       "v1," + base64.RawURLEncoding.EncodeToString(mustDecode(t, raw)),
		"signature of another": "v1," + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"upper-case prefix":    "V1," + raw,
	}
	for name, sig := range cases {
		h := signed(now, body, current)
		h.Set(webhook.HeaderSignature, sig)
		require.ErrorIs(t, verifier(current).Verify(h, body), webhook.ErrNoMatch, name)
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

// The tolerance is ±5 minutes, inclusive: 300 s either way passes, 301 s does not.
func TestTimestampTolerance(t *testing.T) {
	t.Parallel()
	for offset, ok := range map[time.Duration]bool{
		-301 * time.Second: false, -300 * time.Second: true, 0: true,
		300 * time.Second: true, 301 * time.Second: false, 24 * time.Hour: false,
	} {
		err := verifier(current).Verify(signed(now.Add(offset), body, current), body)
		if ok {
			require.NoError(t, err, offset)
		} else {
			require.ErrorIs(t, err, webhook.ErrBadTimestamp, offset)
		}
	}
	h := signed(now, body, current)
	h.Set(webhook.HeaderTimestamp, "12e8")
	require.ErrorIs(t, verifier(current).Verify(h, body), webhook.ErrBadTimestamp)
}

func TestMissingHeadersAreRejected(t *testing.T) {
	t.Parallel()
	for _, name := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
		h := signed(now, body, current)
		h.Del(name)
		require.ErrorIs(t, verifier(current).Verify(h, body), webhook.ErrMissingHeaders, name)
	}
}

func TestParseSecrets(t *testing.T) {
	t.Parallel()
	keys, err := webhook.ParseSecrets(webhook.FormatSecret(current) + " , " + webhook.FormatSecret(retired))
	require.NoError(t, err)
	require.Equal(t, [][]byte{current, retired}, keys)

	for name, spec := range map[string]string{
		"empty":      " ",
		"no prefix":  base64.StdEncoding.EncodeToString(current),
		"bad base64": "whsec_" + "not*base64!",
		"too short":  webhook.FormatSecret([]byte("short")),
		"23 bytes":   webhook.FormatSecret([]byte("0123456789abcdefghijklm")),
		"all zeros":  webhook.FormatSecret(make([]byte, 32)),
		"7 values":   webhook.FormatSecret(bytes.Repeat([]byte("abcdefg"), 5)),
	} {
		_, err := webhook.ParseSecrets(spec)
		require.Error(t, err, name)
		if strings.TrimSpace(spec) != "" {
			require.NotContains(t, err.Error(), strings.TrimPrefix(spec, "whsec_"), "an error never echoes the secret")
		}
	}
}
