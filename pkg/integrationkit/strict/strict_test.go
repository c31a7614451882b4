package strict_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/strict"
)

type line struct {
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
}

type audit struct {
	By string `json:"by"`
}

// order exercises every way encoding/json binds a member: tags, an untagged field, a
// promoted field, a skipped field, slices, maps, interfaces, raw messages and a type
// that unmarshals itself.
type order struct {
	audit
	ID     string            `json:"id"`
	Lines  []line            `json:"lines"`
	Total  *int64            `json:"total_minor"`
	Labels map[string]string `json:"labels"`
	Extra  any               `json:"extra"`
	Raw    json.RawMessage   `json:"raw"`
	At     *time.Time        `json:"at"`
	Skip   string            `json:"-"`
	Plain  string
}

func nested(depth int) string {
	return `{"extra":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	open := strict.Decoder{AllowUnknown: true}
	tests := []struct {
		name string
		dec  strict.Decoder
		doc  string
		// want is the *strict.Error message, or "" when the document is accepted.
		want string
	}{
		{"every kind of field", strict.Decoder{}, `{"by":"me","id":"o-1","lines":[{"description":"a","quantity":2},{"description":"b"}],
			"total_minor":5,"labels":{"a":"1","b":"2"},"extra":{"k":[1,{"x":null}]},"raw":{"r":1,"r":2},"at":"2030-01-02T03:04:05Z","Plain":"p"}`, ""},
		{"duplicate at the top", strict.Decoder{}, `{"id":"a","id":"b"}`, `duplicate member "id"`},
		{"duplicate spelled with an escape", strict.Decoder{}, `{"id":"a","\u0069d":"b"}`, `duplicate member "id"`},
		{"duplicate in an array element", strict.Decoder{}, `{"lines":[{"quantity":1},{"quantity":1,"quantity":2}]}`, `duplicate member "quantity" in lines[1]`},
		{"duplicate in a map", strict.Decoder{}, `{"labels":{"a":"1","a":"2"}}`, `duplicate member "a" in labels`},
		{"duplicate under an interface", strict.Decoder{}, `{"extra":{"k":[{"x":1,"x":1}]}}`, `duplicate member "x" in extra.k[0]`},
		{"duplicate under an unknown member", open, `{"discount":{"a":1,"a":2}}`, `duplicate member "a" in discount`},
		{"empty array", strict.Decoder{}, `{"lines":[]}`, ""},
		{"one name in two objects", strict.Decoder{}, `{"lines":[{"description":"a"},{"description":"b"}]}`, ""},
		{"case-only match", strict.Decoder{}, `{"ID":"a"}`, `unknown member "ID"`},
		{"case-only match in an element", strict.Decoder{}, `{"lines":[{"Description":"x"}]}`, `unknown member "Description" in lines[0]`},
		{"Unicode fold match", strict.Decoder{}, `{"line\u017f":[]}`, `unknown member "lineſ"`},
		{"case-only match of an untagged field", strict.Decoder{}, `{"plain":"p"}`, `unknown member "plain"`},
		{"case-only match of a promoted field", strict.Decoder{}, `{"BY":"me"}`, `unknown member "BY"`},
		{"case-only match with unknown members allowed", open, `{"Total_Minor":1}`, `unknown member "Total_Minor"`},
		{"unknown member", strict.Decoder{}, `{"discount":5}`, `unknown member "discount"`},
		{"unknown member allowed", open, `{"discount":{"a":[1]},"id":"x"}`, ""},
		{"skipped field", strict.Decoder{}, `{"Skip":"x"}`, `unknown member "Skip"`},
		{"raw message left to the caller", strict.Decoder{}, `{"raw":{"a":1,"a":2,"A":3}}`, ""},
		{"nesting of 64", strict.Decoder{}, nested(strict.MaxDepth - 1), ""},
		{"nesting of 65", strict.Decoder{}, nested(strict.MaxDepth), `nesting deeper than 64 in extra` + strings.Repeat("[0]", strict.MaxDepth-1)},
		{"garbage after the value", strict.Decoder{}, `{"id":"a"} x`, "data after the JSON value"},
		{"a second value", strict.Decoder{}, `{"id":"a"}{"id":"a","id":"b"}`, "data after the JSON value"},
		{"whitespace after the value", strict.Decoder{}, "{\"id\":\"a\"}\n\t ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := order{ID: "untouched"}
			err := tc.dec.Decode([]byte(tc.doc), &got)
			if tc.want == "" {
				require.NoError(t, err)
				std := order{ID: "untouched"}
				require.NoError(t, json.Unmarshal([]byte(tc.doc), &std))
				require.Equal(t, std, got, "binds as encoding/json does")
				return
			}
			var se *strict.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.want, se.Error())
			require.Equal(t, order{ID: "untouched"}, got, "a refused document leaves v alone")
		})
	}
}

func TestDecodePassesOnEncodingJSONErrors(t *testing.T) {
	t.Parallel()
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var invalid *json.InvalidUnmarshalError
	var o order
	for doc, is := range map[string]func(error) bool{
		``:                             func(err error) bool { return errors.Is(err, io.EOF) },
		" \n":                          func(err error) bool { return errors.Is(err, io.EOF) },
		`{"id":"a"`:                    func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		`{"lines":[{`:                  func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		`{"id":}`:                      func(err error) bool { return errors.As(err, &syntax) },
		`{"id":"a",}`:                  func(err error) bool { return errors.As(err, &syntax) },
		`{"total_minor":"1"}`:          func(err error) bool { return errors.As(err, &typeErr) && typeErr.Field == "total_minor" },
		`{"lines":[{"quantity":1.5}]}`: func(err error) bool { return errors.As(err, &typeErr) },
	} {
		require.True(t, is(strict.Decode([]byte(doc), &o)), "%q: %v", doc, strict.Decode([]byte(doc), &o))
	}
	require.ErrorAs(t, strict.Decode([]byte(`{}`), o), &invalid)
	require.ErrorAs(t, strict.Decode([]byte(`{}`), nil), &invalid)
}

func TestDecodeOtherTargets(t *testing.T) {
	t.Parallel()
	var items []line
	err := strict.Decode([]byte(`[{"quantity":1},{"quantity":1,"quantity":1}]`), &items)
	require.EqualError(t, err, `duplicate member "quantity" in [1]`)

	var tree map[string]any
	require.NoError(t, strict.Decoder{UseNumber: true}.Decode([]byte(`{"n":12345678901234567890,"o":{"p":[true]}}`), &tree))
	require.Equal(t, json.Number("12345678901234567890"), tree["n"])

	var se *strict.Error
	require.ErrorAs(t, strict.Decode([]byte(`{"lines":[{"Quantity":1}]}`), &order{}), &se)
	require.Equal(t, strict.Unknown, se.Reason)
	require.Equal(t, "lines[0].Quantity", se.Field())
	require.ErrorAs(t, strict.Decode([]byte(`{"id":"a","id":"a"}`), &order{}), &se)
	require.Equal(t, "id", se.Field())

	var raw json.RawMessage
	require.NoError(t, strict.Decode([]byte(` {"a":1,"a":2} `), &raw), "a raw message is the caller's to check")
	require.ErrorAs(t, strict.Decode([]byte(`{} []`), &raw), &se)
	require.Equal(t, strict.TrailingData, se.Reason)
}
