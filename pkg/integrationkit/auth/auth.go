// Package auth checks bearer tokens per role, in constant time, for echo routes.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
)

// Tokens maps bearer tokens to roles. The zero value accepts nothing.
type Tokens struct {
	entries []entry
}

type entry struct {
	role string
	name string            // the caller's stable name, "" when the entry names none
	hash [sha256.Size]byte // tokens are compared by digest: equal length, constant time
}

// callerName is the form of a caller's name in "role:name:token".
var callerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ParseTokens reads "role:token,role:name:token,…". Every role must be one of roles;
// every token must pass CheckToken, so a typo cannot leave a guessable token in use,
// cannot contain ':', and may appear once: a token in two entries would stand for
// whichever role matched first. A name (lowercase letters, digits, '.', '_', '-')
// names the caller for good: several tokens may carry it while one is rotated, and
// whatever a caller owns across requests (its Idempotency-Keys, say) is scoped to it.
// No error repeats a token.
func ParseTokens(spec string, roles ...string) (Tokens, error) {
	var t Tokens
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n := len(t.entries) + 1
		role, token, ok := strings.Cut(item, ":")
		if !ok || token == "" {
			return Tokens{}, fmt.Errorf("entry %d is not role:token or role:name:token", n)
		}
		name := ""
		if nm, tok, named := strings.Cut(token, ":"); named {
			if !callerName.MatchString(nm) || tok == "" || strings.Contains(tok, ":") {
				return Tokens{}, fmt.Errorf("entry %d is not role:name:token (a name is lowercase letters, digits, '.', '_' or '-')", n)
			}
			name, token = nm, tok
		}
		if !slices.Contains(roles, role) {
			return Tokens{}, fmt.Errorf("unknown role %q (want one of %s)", role, strings.Join(roles, ", "))
		}
		if err := CheckToken(token); err != nil {
			return Tokens{}, fmt.Errorf("token for role %q (entry %d): %w", role, n, err)
		}
		e := entry{role: role, name: name, hash: sha256.Sum256([]byte(token))}
		if i := slices.IndexFunc(t.entries, func(o entry) bool { return o.hash == e.hash }); i >= 0 {
			return Tokens{}, fmt.Errorf("entries %d (role %q) and %d (role %q) have the same token", i+1, t.entries[i].role, n, role)
		}
		t.entries = append(t.entries, e)
	}
	return t, nil
}

// Token strength: a bearer token must be at least MinTokenLength characters, of at
// least MinTokenDistinct different ones, and hold no white space or control
// character. The distinct count refuses what passes for long but is guessable
// ("aaaaaaaaaaaaaaaa", "abababababababab"); any generated token has far more.
const (
	MinTokenLength   = 16
	MinTokenDistinct = 8
)

// CheckToken refuses a weak bearer token, without repeating it.
func CheckToken(token string) error {
	distinct := map[rune]bool{}
	for _, r := range token {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return errors.New("contains white space or a control character")
		}
		distinct[r] = true
	}
	switch {
	case utf8.RuneCountInString(token) < MinTokenLength:
		return fmt.Errorf("shorter than %d characters", MinTokenLength)
	case len(distinct) < MinTokenDistinct:
		return fmt.Errorf("has fewer than %d different characters", MinTokenDistinct)
	}
	return nil
}

// Roles reports how many tokens each role has.
func (t Tokens) Roles() map[string]int {
	out := map[string]int{}
	for _, e := range t.entries {
		out[e.role]++
	}
	return out
}

const (
	principalKey = "auth.principal"
	callerKey    = "auth.caller"
)

// Require admits requests whose bearer token belongs to one of roles, comparing
// tokens in constant time.
func (t Tokens) Require(roles ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			raw, ok := bearer(c.Request())
			if !ok {
				c.Response().Header().Set("WWW-Authenticate", `Bearer`)
				return problem.New(http.StatusUnauthorized, "unauthorized", "a bearer token is required")
			}
			e, ok := t.match(raw)
			if !ok {
				c.Response().Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				return problem.New(http.StatusUnauthorized, "unauthorized", "the bearer token is not valid")
			}
			if !slices.Contains(roles, e.role) {
				return problem.Newf(http.StatusForbidden, "forbidden", "this endpoint needs role %s", strings.Join(roles, " or "))
			}
			c.Set(principalKey, e.principal())
			c.Set(callerKey, e.caller())
			return next(c)
		}
	}
}

// match finds the entry of a raw token. Every entry is compared, whatever matched, so
// timing does not reveal which one did.
func (t Tokens) match(raw string) (entry, bool) {
	sum := sha256.Sum256([]byte(raw))
	matched := -1
	for i, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.hash[:]) == 1 && matched < 0 {
			matched = i
		}
	}
	if matched < 0 {
		return entry{}, false
	}
	return t.entries[matched], true
}

// principal names the token by its caller's name, or by its role and a digest
// prefix, never by the token.
func (e entry) principal() string {
	if e.name != "" {
		return e.role + ":" + e.name
	}
	return e.role + ":" + hex.EncodeToString(e.hash[:6])
}

// caller names who is calling for good: "role:name", which survives the rotation of
// the token; a token without a name is a caller of its own (its principal), so two
// unnamed tokens of one role never share what a caller owns.
func (e entry) caller() string {
	if e.name != "" {
		return e.role + ":" + e.name
	}
	return e.principal()
}

// Principal returns the authenticated principal of the request ("role:name", or
// "role:digest" for a token without a name), or "". It tells tokens apart in logs and
// audit records.
func Principal(c echo.Context) string {
	p, _ := c.Get(principalKey).(string)
	return p
}

// Caller returns the stable caller of the request, or "": "role:name" for a named
// token, so rotating the token (several tokens of one name) changes nothing the caller
// owns across requests; for a token without a name, its principal ("role:digest").
func Caller(c echo.Context) string {
	p, _ := c.Get(callerKey).(string)
	return p
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
