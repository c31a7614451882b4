package strict

import (
	"encoding/json"
	"reflect"
	"unicode/utf8"
)

// untyped reports whether a value bound to t binds no member to a field: t is an
// interface, a type that unmarshals itself, or a map from strings to such values.
// Only duplicates, depth and trailing data can then be refused.
func untyped(t reflect.Type) bool {
	t = bound(t)
	if t == nil {
		return true
	}
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && bound(t.Elem()) == nil
}

// clean reports whether data is one JSON value (whitespace aside) that names no
// member twice in any object and nests no deeper than MaxDepth: what the walk checks
// of an untyped document, found here by a scan of the bytes. It answers false for
// anything it does not vouch for (a member name with an escape or bytes that are not
// UTF-8, which the walk compares after decoding them), and the walk then decides:
// a document clean accepts the walk accepts too.
func clean(data []byte) bool {
	if !json.Valid(data) {
		return false
	}
	type level struct {
		names map[string]struct{} // nil in an array
		name  bool                // the next string is a member's name
	}
	var stack []level
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if len(stack) == MaxDepth {
				return false
			}
			l := level{}
			if data[i] == '{' {
				l = level{names: map[string]struct{}{}, name: true}
			}
			stack = append(stack, l)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.names != nil {
				top.name = true
			}
		case '"':
			end, escaped := stringEnd(data, i)
			if top := len(stack) - 1; top >= 0 && stack[top].name {
				name := data[i+1 : end]
				if escaped || !utf8.Valid(name) {
					return false
				}
				if _, dup := stack[top].names[string(name)]; dup {
					return false
				}
				stack[top].names[string(name)] = struct{}{}
				stack[top].name = false
			}
			i = end
		}
	}
	return true
}

// stringEnd returns the index of the quote that closes the string data[start] opens,
// and whether the string holds an escape; data is valid JSON.
func stringEnd(data []byte, start int) (int, bool) {
	escaped := false
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped
		}
	}
	return len(data), escaped
}
