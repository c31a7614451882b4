// Package strict reads request input so that one request has one meaning. encoding/json
// takes the last of two members of the same name and binds "Item_ID" to the field
// tagged item_id; a router ignores query parameters nobody reads. Here a JSON
// document naming a member twice (at any depth), a member that matches a field only
// when case is ignored, nesting deeper than MaxDepth and data after the value are
// refused, and so is a query parameter the route does not take.
package strict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// MaxDepth is the deepest nesting of objects and arrays Decode accepts; the outermost
// object or array is at depth 1.
const MaxDepth = 64

// Decoder decodes one JSON document strictly. The zero value refuses members that
// match no field.
type Decoder struct {
	// AllowUnknown admits members that match no field, for documents their sender may
	// extend. A member that matches a field only case-insensitively is refused all the
	// same: encoding/json would bind it to that field.
	AllowUnknown bool
	// UseNumber stores numbers bound to interface values as json.Number, as
	// json.Decoder.UseNumber does.
	UseNumber bool
}

// Decode is Decoder{}.Decode: members that match no field are refused.
func Decode(data []byte, v any) error { return Decoder{}.Decode(data, v) }

// Decode stores the JSON document data in v, a non-nil pointer, once it has checked
// that data holds exactly one JSON value (whitespace aside), that no object at any
// depth names a member twice (names compared after unescaping), that nothing nests
// deeper than MaxDepth, and that every member of an object bound to a struct matches
// one of its fields exactly, case included, or, with AllowUnknown, none of them even
// case-insensitively. Those refusals are an *Error naming the first culprit in
// document order, found before v is touched. Other errors are encoding/json's:
// *json.SyntaxError, io.EOF for an empty document, io.ErrUnexpectedEOF for one cut
// short, *json.UnmarshalTypeError for a value of the wrong type, and the errors of
// types that unmarshal themselves (v may then be partly filled in).
//
// A json.RawMessage is the caller's to check: its contents are copied unchecked, to be
// decoded later with Decode. Members bound to a type that unmarshals itself (such as
// time.Time) are checked for duplicates and depth only.
func (d Decoder) Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	if err := d.check(data, rv.Type().Elem()); err != nil {
		return err
	}
	return d.decode(data, v)
}

// decode stores data in v as Decode does once data has passed the checks.
func (d Decoder) decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if !d.AllowUnknown {
		dec.DisallowUnknownFields()
	}
	if d.UseNumber {
		dec.UseNumber()
	}
	return dec.Decode(v)
}

// DecodeObject is Decode for data, a JSON object that Decode has already accepted into
// members (a map[string]any: so data names no member twice, nests no deeper than
// MaxDepth and holds nothing after the object), stored in v, a pointer to a struct. When
// no field of the struct binds members of its own (its fields take scalars,
// json.RawMessage and the like), all that is left to check is members' names against
// the fields, and that needs no second walk of the document: DecodeObject checks the
// names and decodes. When a name is refused, or the struct has fields that bind
// members, it is Decode, which names the first culprit in document order. The result
// is Decode's in every case.
func (d Decoder) DecodeObject(data []byte, members map[string]any, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem().Kind() != reflect.Struct {
		return d.Decode(data, v)
	}
	fs := fieldsOf(rv.Type().Elem())
	if !fs.flat || !d.namesFit(fs, members) {
		return d.Decode(data, v)
	}
	return d.decode(data, v)
}

// namesFit reports whether every name of members binds to a field of fs exactly or,
// with AllowUnknown, matches none even case-insensitively.
func (d Decoder) namesFit(fs *fieldSet, members map[string]any) bool {
	for name := range members {
		if _, exact := fs.byName[name]; exact {
			continue
		}
		if !d.AllowUnknown || fs.folds(name) {
			return false
		}
	}
	return true
}

// check checks data against t without storing anything: by walking its tokens, or,
// for a document bound to nothing but interfaces (such as a map[string]any), by a
// scan of its bytes when that finds it clean, which spares the walk's cost per token.
func (d Decoder) check(data []byte, t reflect.Type) error {
	if untyped(t) && clean(data) {
		return nil
	}
	return d.walk(data, t)
}

// walk walks the tokens of data against t.
func (d Decoder) walk(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number's range is the decoding's concern, not the walk's
	s := scanner{dec: dec, allowUnknown: d.AllowUnknown}
	err := s.value(t, 0)
	switch {
	case errors.Is(err, io.EOF) && s.started:
		return io.ErrUnexpectedEOF
	case err != nil:
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &Error{Reason: TrailingData}
	}
	return nil
}

// Reason says why Decode refused a document.
type Reason int

const (
	// Duplicate: an object names the same member twice.
	Duplicate Reason = iota + 1
	// Unknown: a member of an object bound to a struct matches none of its fields
	// exactly.
	Unknown
	// TooDeep: objects and arrays nest deeper than MaxDepth.
	TooDeep
	// TrailingData: something other than whitespace follows the JSON value.
	TrailingData
)

// Error is a document Decode refused; its message names the culprit, such as
// `duplicate member "quantity"` or `unknown member "Description" in lines[1]`.
type Error struct {
	Reason Reason
	// Path locates the object holding Member, or the value nested too deep, as
	// lines[1]; it is empty at the top level.
	Path string
	// Member is the member's name as sent, for Duplicate and Unknown.
	Member string
}

func (e *Error) Error() string {
	var msg string
	switch e.Reason {
	case Duplicate:
		msg = fmt.Sprintf("duplicate member %q", e.Member)
	case Unknown:
		msg = fmt.Sprintf("unknown member %q", e.Member)
	case TooDeep:
		msg = fmt.Sprintf("nesting deeper than %d", MaxDepth)
	case TrailingData:
		return "data after the JSON value"
	}
	if e.Path != "" {
		msg += " in " + e.Path
	}
	return msg
}

// Field is the member's place in the document in the form problem.FieldError uses, as
// lines[1].Description.
func (e *Error) Field() string {
	if e.Path == "" {
		return e.Member
	}
	return e.Path + "." + e.Member
}
