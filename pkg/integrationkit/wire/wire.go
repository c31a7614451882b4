// Package wire is the one definition of the values that cross the wire between a
// sender and a receiver: idempotency keys, the external identifiers an event carries
// (in its data, or inside its key), amounts in minor units and currency codes.
//
// The sender checks what it accepts from its own callers with these functions, and the
// receiver checks what it receives with the same ones, so whatever the sender accepts
// the receiver accepts too: an event is never refused for the shape of a value after
// its sender has answered yes and stored it. Each check returns nil or an error whose
// text completes a sentence that starts with the field's name ("must be 1 to 128
// bytes"), ready for a field error of a 400 answer.
//
// Limits are in bytes, never characters: a byte limit is what a column, a header or a
// buffer holds, and it means the same on both sides whatever the script.
package wire

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// MaxKeyBytes bounds an idempotency key.
	MaxKeyBytes = 255
	// MaxKeyIDBytes bounds an identifier that becomes part of a key. It leaves
	// MaxKeyBytes-MaxKeyIDBytes = 127 bytes of the key for the rest: a UUID and two
	// separators (38 bytes) and a name of up to MaxKeyNameBytes.
	MaxKeyIDBytes = 128
	// MaxKeyNameBytes bounds the name (such as an event type) that a key built as
	// <name>:<uuid>:<identifier> starts with, so that the key fits MaxKeyBytes.
	MaxKeyNameBytes = MaxKeyBytes - MaxKeyIDBytes - 38
	// MaxIDBytes bounds an identifier that an event carries as data only.
	MaxIDBytes = 255
	// MaxMinorUnits bounds an amount in minor units (1e15). It is far below int64's
	// range, so sums of many amounts cannot overflow, and below 2^53, so every amount
	// is exact in a JSON parser that reads numbers as float64.
	MaxMinorUnits = 1_000_000_000_000_000
)

// CheckKey accepts an idempotency key: 1 to MaxKeyBytes bytes of printable ASCII
// (space to tilde), neither starting nor ending with a space. That is exactly what an
// HTTP header value carries unchanged (a receiver trims the spaces around a header
// value), so the key is the same whether it travels in a header or in a JSON body.
func CheckKey(s string) error {
	return checkASCII(s, MaxKeyBytes)
}

// CheckKeyID accepts an identifier that becomes part of a key as well as of the data:
// 1 to MaxKeyIDBytes bytes of printable ASCII, neither starting nor ending with a
// space. Every identifier it accepts, CheckID accepts too, and a key built as
// <name>:<uuid>:<identifier> with a name CheckKey accepts of at most MaxKeyNameBytes
// is a key CheckKey accepts.
func CheckKeyID(s string) error {
	return checkASCII(s, MaxKeyIDBytes)
}

// CheckID accepts an identifier an event carries as data only: valid UTF-8 of 1 to
// MaxIDBytes bytes, printable characters only (letters, marks, numbers, punctuation,
// symbols and the ASCII space, as unicode.IsPrint says: no control, format or
// unassigned code points, no other kind of space), neither starting nor ending with a
// space. JSON carries every such string unchanged.
func CheckID(s string) error {
	switch {
	case !utf8.ValidString(s):
		return errors.New("must be valid UTF-8")
	case s == "" || len(s) > MaxIDBytes:
		return fmt.Errorf("must be 1 to %d bytes", MaxIDBytes)
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return errors.New("must not start or end with a space")
	case strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }):
		return errors.New("must contain printable characters only")
	}
	return nil
}

// CheckMinorUnits accepts an amount of 0 to MaxMinorUnits minor units; a sender may
// demand more (such as a positive amount), never less.
func CheckMinorUnits(n int64) error {
	if n < 0 || n > MaxMinorUnits {
		return errors.New("must be between 0 and 1e15 (minor units)")
	}
	return nil
}

// CheckCurrency accepts the shape of an ISO 4217 code: three ASCII upper-case letters.
// A sender may restrict the codes further, to those it knows are in use.
func CheckCurrency(s string) error {
	if len(s) != 3 || strings.ContainsFunc(s, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return errors.New("must be an ISO 4217 code such as EUR")
	}
	return nil
}

func checkASCII(s string, limit int) error {
	switch {
	case s == "" || len(s) > limit:
		return fmt.Errorf("must be 1 to %d bytes", limit)
	case strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r > '~' }):
		return errors.New("must be printable ASCII")
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return errors.New("must not start or end with a space")
	}
	return nil
}
