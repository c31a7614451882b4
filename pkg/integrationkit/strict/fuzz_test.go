package strict_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"handoff/pkg/integrationkit/strict"
)

// orderMembers are the names encoding/json binds to a field of order.
var orderMembers = []string{"by", "id", "lines", "total_minor", "labels", "extra", "raw", "at", "Plain"}

// FuzzDecode feeds arbitrary documents to Decode into order. It must never panic, and
// refuse with an error other than *strict.Error only what encoding/json refuses too
// (the strict checks add refusals, never other ones). Whatever it accepts,
// encoding/json accepts too and binds to the same value, and (checked here without
// the package's walk, at the top level) names each member once and exactly as a field
// is named, or names no field at all when unknown members are allowed.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"by":"me","id":"o-1","lines":[{"description":"a","quantity":2}],"total_minor":5,"labels":{"a":"1"},` +
			`"extra":{"k":[1,{"x":null}]},"raw":{"r":1,"r":2},"at":"2030-01-02T03:04:05Z","Plain":"p"}`,
		`{"id":"a","id":"b"}`, `{"id":"a","\u0069d":"b"}`, `{"ID":"a"}`, `{"line\u017f":[]}`, `{"lines":[{"Quantity":1}]}`,
		`{"discount":{"a":1,"a":2}}`, `{"labels":{"a":"1","a":"2"}}`, `{"id":"a"} x`, `{"id":"a"`, `[]`, `null`, ``,
		`{"total_minor":"1"}`, `{"extra":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, allowUnknown bool) {
		var got order
		err := strict.Decoder{AllowUnknown: allowUnknown}.Decode(doc, &got)
		std := json.NewDecoder(bytes.NewReader(doc))
		if !allowUnknown {
			std.DisallowUnknownFields()
		}
		var want order
		stdErr := std.Decode(&want)
		var se *strict.Error
		if err != nil {
			if !errors.As(err, &se) && stdErr == nil {
				t.Fatalf("refused %q with %v, which only the strict decoding may add", doc, err)
			}
			return
		}
		if stdErr != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", doc, stdErr)
		}
		if !jsonEqual(t, want, got) {
			t.Fatalf("%q binds to %+v, encoding/json to %+v", doc, got, want)
		}
		for i, name := range topMembers(t, doc) {
			exact := slices.Contains(orderMembers, name)
			folds := slices.ContainsFunc(orderMembers, func(m string) bool { return strings.EqualFold(m, name) })
			if !exact && (folds || !allowUnknown) {
				t.Fatalf("accepted member %q of %q", name, doc)
			}
			if slices.Contains(topMembers(t, doc)[:i], name) {
				t.Fatalf("accepted member %q twice in %q", name, doc)
			}
		}
	})
}

// topMembers lists the member names of doc's top-level object in order, repeats kept.
func topMembers(t *testing.T, doc []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted document does not tokenize: %v", err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("accepted document does not tokenize: %v", err)
		}
	}
	return names
}

// jsonEqual compares two values by their encoding, which treats NaN-free values and
// raw messages alike however they were built.
func jsonEqual(t *testing.T, a, b order) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		t.Fatalf("marshal: %v %v", errA, errB)
	}
	return bytes.Equal(ja, jb)
}

// flat is a struct whose fields bind no members of their own, as envelopes are.
type flat struct {
	ID       string          `json:"id"`
	Sequence *int64          `json:"sequence"`
	Data     json.RawMessage `json:"data"`
	Any      any             `json:"any"`
	Plain    string
}

// FuzzDecodeObjectIsDecode feeds documents Decode accepts into a map to DecodeObject,
// into flat and into order (whose fields bind members, so DecodeObject falls back on
// Decode): the error, or the value stored, must be Decode's, the same to the byte.
func FuzzDecodeObjectIsDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","sequence":3,"data":{"x":[1,2]},"any":{"k":null},"Plain":"p","other":1}`,
		`{"ID":"a"}`, `{"id":"a","Sequence":1}`, `{"plain":"p"}`, `{"id":1}`, `{"sequence":"1"}`, `{"sequence":1.5}`,
		`{"other":{"ID":1},"id":"b"}`, `{"lines":[{"Quantity":1}]}`, `{"id\u017f":"a"}`, `{}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, allowUnknown bool) {
		var members map[string]any
		if err := (strict.Decoder{UseNumber: true}).Decode(doc, &members); err != nil || members == nil {
			return
		}
		d := strict.Decoder{AllowUnknown: allowUnknown}
		var got, want flat
		if err, wantErr := d.DecodeObject(doc, members, &got), d.Decode(doc, &want); fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%q into flat: DecodeObject says %v, Decode %v", doc, err, wantErr)
		}
		a, errA := json.Marshal(got)
		b, errB := json.Marshal(want)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%q into flat: DecodeObject stores %s, Decode %s (%v, %v)", doc, a, b, errA, errB)
		}
		var gotOrder, wantOrder order
		if err, wantErr := d.DecodeObject(doc, members, &gotOrder), d.Decode(doc, &wantOrder); fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%q into order: DecodeObject says %v, Decode %v", doc, err, wantErr)
		}
	})
}
