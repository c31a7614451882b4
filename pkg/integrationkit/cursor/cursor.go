// Package cursor encodes the positions of keyset paginations as opaque tokens: a
// version, then the position's fields, joined by colons and base64url-encoded. The
// version lets a list change its encoding without misreading the tokens it handed out
// before; each list picks its own, so one list's token is refused by another.
package cursor

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Encode returns the token of the position fields under version. Only the last field
// may contain a colon.
func Encode(version string, fields ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(version + ":" + strings.Join(fields, ":")))
}

// Decode returns the n fields of a token Encode made under version; ok is false for
// anything else, including a token with an empty field.
func Decode(token, version string, n int) (fields []string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, false
	}
	rest, ok := strings.CutPrefix(string(raw), version+":")
	if !ok {
		return nil, false
	}
	fields = strings.SplitN(rest, ":", n)
	if len(fields) != n {
		return nil, false
	}
	for _, f := range fields {
		if f == "" {
			return nil, false
		}
	}
	return fields, true
}

// EncodeSeq returns the token of a position that is one positive integer, such as
// the sequence number or id of the last row of a page.
func EncodeSeq(version string, seq int64) string {
	return Encode(version, strconv.FormatInt(seq, 10))
}

// DecodeSeq returns the positive integer of a token EncodeSeq made under version.
func DecodeSeq(token, version string) (int64, bool) {
	fields, ok := Decode(token, version, 1)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(fields[0], 10, 64)
	return seq, err == nil && seq > 0
}
