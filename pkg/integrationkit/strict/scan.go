package strict

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// scanner walks a document's tokens alongside the Go type each value is bound to; a
// nil type stands for a value whose members bind to nothing (an interface, an unknown
// member, a type that unmarshals itself), which is checked for duplicates and depth.
type scanner struct {
	dec          *json.Decoder
	allowUnknown bool
	started      bool
	path         []step
}

// step is one level of the path: an array index, or a member name when index is -1.
type step struct {
	member string
	index  int
}

func (s *scanner) value(t reflect.Type, depth int) error {
	t = bound(t)
	if t == rawMessageType {
		var raw json.RawMessage
		return s.dec.Decode(&raw)
	}
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	s.started = true
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return &Error{Reason: TooDeep, Path: s.where()}
	}
	if delim == '[' {
		return s.array(t, depth+1)
	}
	return s.object(t, depth+1)
}

func (s *scanner) array(t reflect.Type, depth int) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i := 0; s.dec.More(); i++ {
		s.path = append(s.path, step{index: i})
		if err := s.value(elem, depth); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
	_, err := s.dec.Token()
	return err
}

func (s *scanner) object(t reflect.Type, depth int) error {
	var fields *fieldSet
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := make(map[string]struct{})
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string) // json.Decoder.Token returns only strings in key position
		if _, dup := seen[name]; dup {
			return &Error{Reason: Duplicate, Path: s.where(), Member: name}
		}
		seen[name] = struct{}{}
		ft := elem
		if fields != nil {
			known, exact := fields.byName[name]
			if !exact && (!s.allowUnknown || fields.folds(name)) {
				return &Error{Reason: Unknown, Path: s.where(), Member: name}
			}
			ft = known
		}
		s.path = append(s.path, step{member: name, index: -1})
		if err := s.value(ft, depth); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
	_, err := s.dec.Token()
	return err
}

// where renders the current path as lines[1].description.
func (s *scanner) where() string {
	var b strings.Builder
	for _, st := range s.path {
		if st.index >= 0 {
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.member)
	}
	return b.String()
}

// bound is the type whose members a value binds to: t without pointers, nil for a
// type that unmarshals itself, json.RawMessage kept as it is.
func bound(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil, t == rawMessageType:
		return t
	case t.Kind() == reflect.Interface:
		return nil
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
		return nil
	}
	return t
}
