package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"
)

// Browser sessions: a person proves a token once (a login form) and gets a session
// value to keep in a cookie. The value is an HMAC keyed by the token's digest over an
// expiry and a random nonce, so it never contains the token, cannot be made without
// it, and any replica that knows the token verifies it with no shared state. Taking
// the token out of the configuration ends every session made with it; a session
// value stays valid until it expires otherwise, so keep lifetimes short.

// Refusals of Login.
var (
	// ErrInvalidToken: the token is not one of the configured tokens.
	ErrInvalidToken = errors.New("auth: the token is not valid")
	// ErrForbidden: the token is valid but of another role.
	ErrForbidden = errors.New("auth: the token's role may not do this")
)

const (
	sessionPrefix  = "s1."
	sessionContext = "handoff/auth/session/v1\x00"
	nonceBytes     = 16
)

// Login checks a raw token against roles in constant time and returns a session value
// valid until expires, with the token's principal.
func (t Tokens) Login(raw string, expires time.Time, roles ...string) (session, principal string, err error) {
	e, ok := t.match(raw)
	switch {
	case !ok:
		return "", "", ErrInvalidToken
	case !slices.Contains(roles, e.role):
		return "", "", ErrForbidden
	}
	payload := make([]byte, 8+nonceBytes)
	binary.BigEndian.PutUint64(payload, uint64(expires.Unix()))
	if _, err := rand.Read(payload[8:]); err != nil {
		return "", "", err
	}
	enc := base64.RawURLEncoding
	return sessionPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(e.seal(payload)),
		e.principal(), nil
}

// Session checks a session value made by Login at time now and returns its principal;
// ok is false when the value is malformed, forged, expired, of a token no longer
// configured, or of a role not in roles.
func (t Tokens) Session(value string, now time.Time, roles ...string) (principal string, ok bool) {
	rest, found := strings.CutPrefix(value, sessionPrefix)
	if !found {
		return "", false
	}
	p, m, found := strings.Cut(rest, ".")
	payload, perr := base64.RawURLEncoding.DecodeString(p)
	mac, merr := base64.RawURLEncoding.DecodeString(m)
	if !found || perr != nil || merr != nil || len(payload) != 8+nonceBytes {
		return "", false
	}
	if int64(binary.BigEndian.Uint64(payload)) <= now.Unix() {
		return "", false
	}
	matched := -1
	for i, e := range t.entries {
		if hmac.Equal(mac, e.seal(payload)) && matched < 0 {
			matched = i
		}
	}
	if matched < 0 || !slices.Contains(roles, t.entries[matched].role) {
		return "", false
	}
	return t.entries[matched].principal(), true
}

// seal is the MAC of a session payload under the token's digest.
func (e entry) seal(payload []byte) []byte {
	h := hmac.New(sha256.New, e.hash[:])
	h.Write([]byte(sessionContext))
	h.Write(payload)
	return h.Sum(nil)
}
