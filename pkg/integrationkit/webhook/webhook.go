// Package webhook signs and verifies requests the Standard Webhooks way: an HMAC-SHA256
// over "id.timestamp.body" under a shared whsec_ secret, sent in the webhook-id,
// webhook-timestamp and webhook-signature headers. Several secrets may be active at
// once, so a secret can be rotated without a gap.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of Standard Webhooks.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

const secretPrefix = "whsec_"

// Secret strength: a key decodes to at least MinSecretBytes bytes of at least
// MinSecretDistinct different values. The second refuses a key that is long but
// not secret, such as 32 zero bytes; any random key has far more.
const (
	MinSecretBytes    = 24
	MinSecretDistinct = 8
)

// ParseSecrets reads one or more space- or comma-separated whsec_<base64> secrets,
// each as strong as MinSecretBytes and MinSecretDistinct say. No error repeats a
// secret.
func ParseSecrets(s string) ([][]byte, error) {
	var out [][]byte
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		raw, ok := strings.CutPrefix(f, secretPrefix)
		if !ok {
			return nil, errors.New("secret must start with whsec_")
		}
		key, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return nil, errors.New("secret is not valid base64 after whsec_")
		}
		if len(key) < MinSecretBytes {
			return nil, fmt.Errorf("secret must decode to at least %d bytes", MinSecretBytes)
		}
		if distinct(key) < MinSecretDistinct {
			return nil, fmt.Errorf("secret must hold at least %d different byte values", MinSecretDistinct)
		}
		out = append(out, key)
	}
	if len(out) == 0 {
		return nil, errors.New("no secret given")
	}
	return out, nil
}

// distinct counts the different byte values of key.
func distinct(key []byte) int {
	var seen [256]bool
	n := 0
	for _, b := range key {
		if !seen[b] {
			seen[b], n = true, n+1
		}
	}
	return n
}

// FormatSecret renders key as a whsec_ secret.
func FormatSecret(key []byte) string { return secretPrefix + base64.StdEncoding.EncodeToString(key) }

// Signer signs outgoing requests with every active secret.
type Signer struct{ keys [][]byte }

// NewSigner returns a signer over keys (the first is the current one).
func NewSigner(keys [][]byte) *Signer { return &Signer{keys: keys} }

// ErrInvalidID refuses a message id that is empty or holds anything but printable
// ASCII (so it fits a header unchanged).
//
// An id may contain '.', the separator of the signed content "id.timestamp.body":
// the dispatcher signs its idempotency keys ("thing.happened:…") as ids, so the key
// is covered by the signature. That content is still read one way only: the timestamp
// is signed as the canonical digits of an integer, and a receiver that accepts only a
// JSON object as body cannot be handed the same bytes split elsewhere, since any other
// split leaves a body that starts with digits or inside a JSON value.
var ErrInvalidID = errors.New("webhook id must be 1 or more printable ASCII characters")

// Sign returns the webhook-signature value for one message, or ErrInvalidID. The
// timestamp is signed in whole seconds.
func (s *Signer) Sign(id string, ts time.Time, body []byte) (string, error) {
	if !validID(id) {
		return "", ErrInvalidID
	}
	sigs := make([]string, 0, len(s.keys))
	for _, k := range s.keys {
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac(k, id, ts.Unix(), body)))
	}
	return strings.Join(sigs, " "), nil
}

// SetHeaders signs body and sets the webhook-id, webhook-timestamp and
// webhook-signature headers on h. It returns ErrInvalidID, setting nothing, when Sign
// refuses id.
func (s *Signer) SetHeaders(h http.Header, id string, ts time.Time, body []byte) error {
	sig, err := s.Sign(id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

func validID(id string) bool {
	if id == "" {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verification errors; all of them mean 401 to the sender.
var (
	ErrMissingHeaders = errors.New("webhook signature headers missing")
	ErrBadTimestamp   = errors.New("webhook timestamp invalid or outside tolerance")
	ErrNoMatch        = errors.New("no webhook signature matches")
)

// Verifier checks incoming requests against every active secret.
type Verifier struct {
	keys      [][]byte
	tolerance time.Duration
	now       func() time.Time
}

// NewVerifier returns a verifier with the default ±5 min tolerance on the wall clock.
func NewVerifier(keys [][]byte) *Verifier {
	return &Verifier{keys: keys, tolerance: DefaultTolerance, now: time.Now}
}

// WithClock returns a copy that reads the time from now (tests).
func (v *Verifier) WithClock(now func() time.Time) *Verifier {
	c := *v
	c.now = now
	return &c
}

// Verify checks the signature headers of h over the raw body. It accepts the request
// when any v1 signature matches any secret; comparisons run in constant time.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	id, tsRaw, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsRaw == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	now := v.now().Unix()
	tol := int64(v.tolerance / time.Second)
	if ts < now-tol || ts > now+tol {
		return fmt.Errorf("%w: %ds from now", ErrBadTimestamp, ts-now)
	}
	matched := false
	for _, k := range v.keys {
		want := mac(k, id, ts, body)
		for sig := range strings.FieldsSeq(sigs) {
			raw, ok := strings.CutPrefix(sig, "v1,")
			if !ok {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(raw)
			if err != nil {
				continue
			}
			if hmac.Equal(got, want) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrNoMatch
	}
	return nil
}
