package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
)

// Browser sessions: a person proves a token once (a login form) and gets a session
// value to keep in a cookie. The value is a random id and an HMAC over it keyed by the
// token's digest, so it never contains the token, cannot be made without it, and is
// checked against the tokens configured at the time of each request: taking a token
// out of the configuration ends every session made with it.
//
// A value neither expires nor can be ended by itself. The caller keeps a server-side
// record of the sessions it started and admits a value only while its record lives;
// that record decides expiry and logout.

// Refusals of Login.
var (
	// ErrInvalidToken: the token is not one of the configured tokens.
	ErrInvalidToken = errors.New("auth: the token is not valid")
	// ErrForbidden: the token is valid but of another role.
	ErrForbidden = errors.New("auth: the token's role may not do this")
)

const (
	sessionPrefix  = "s2."
	sessionContext = "handoff/auth/session/v2\x00"
	sessionIDBytes = 32
)

// Login checks a raw token against roles in constant time and returns a new session
// value, unique to this login, with the token's principal.
func (t Tokens) Login(raw string, roles ...string) (session, principal string, err error) {
	e, ok := t.match(raw)
	switch {
	case !ok:
		return "", "", ErrInvalidToken
	case !slices.Contains(roles, e.role):
		return "", "", ErrForbidden
	}
	id := make([]byte, sessionIDBytes)
	if _, err := rand.Read(id); err != nil {
		return "", "", err
	}
	enc := base64.RawURLEncoding
	return sessionPrefix + enc.EncodeToString(id) + "." + enc.EncodeToString(e.seal(id)), e.principal(), nil
}

// Session checks a session value made by Login and returns its principal; ok is false
// when the value is malformed, forged, of a token no longer configured, or of a role
// not in roles. Whether the session is still live is the caller's record to say.
func (t Tokens) Session(value string, roles ...string) (principal string, ok bool) {
	rest, found := strings.CutPrefix(value, sessionPrefix)
	if !found {
		return "", false
	}
	i, m, found := strings.Cut(rest, ".")
	id, ierr := base64.RawURLEncoding.DecodeString(i)
	mac, merr := base64.RawURLEncoding.DecodeString(m)
	if !found || ierr != nil || merr != nil || len(id) != sessionIDBytes {
		return "", false
	}
	matched := -1
	for i, e := range t.entries {
		if hmac.Equal(mac, e.seal(id)) && matched < 0 {
			matched = i
		}
	}
	if matched < 0 || !slices.Contains(roles, t.entries[matched].role) {
		return "", false
	}
	return t.entries[matched].principal(), true
}

// seal is the MAC of a session id under the token's digest.
func (e entry) seal(id []byte) []byte {
	h := hmac.New(sha256.New, e.hash[:])
	h.Write([]byte(sessionContext))
	h.Write(id)
	return h.Sum(nil)
}
