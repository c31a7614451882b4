package strict

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// FuzzCleanVouchesOnlyForWhatTheWalkAccepts checks the scan against the walk it
// spares: whatever clean vouches for, the walk accepts, bound to an interface or to a
// map[string]any, so check answers as the walk alone would.
func FuzzCleanVouchesOnlyForWhatTheWalkAccepts(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"b":{"a":[1,{"a":2}]},"c":"x\\"y","d":[]}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":2}}`,
		`[{"k":1},{"k":1}]`, `{"\xff":1,"\xfe":2}`, `{"é":1,"é":2}`, `"x"`, `1 2`, `{"a":1}x`, ``, `{`, `[]`, `null`,
		strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64), strings.Repeat(`[`, 65) + strings.Repeat(`]`, 65),
		strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64), strings.Repeat(`{"a":`, 65) + `1` + strings.Repeat(`}`, 65),
	} {
		f.Add([]byte(seed))
	}
	types := []reflect.Type{reflect.TypeFor[any](), reflect.TypeFor[map[string]any]()}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, typ := range types {
			if clean(doc) {
				if err := (Decoder{}).walk(doc, typ); err != nil {
					t.Fatalf("clean vouched for %q, which the walk refuses bound to %v: %v", doc, typ, err)
				}
			}
			if got, want := fmt.Sprint((Decoder{}).check(doc, typ)), fmt.Sprint((Decoder{}).walk(doc, typ)); got != want {
				t.Fatalf("%q bound to %v: check says %s, the walk %s", doc, typ, got, want)
			}
		}
	})
}

func TestCleanFindsWhatItMust(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]bool{
		`{"a":1,"b":[{"a":1},{"a":1}],"c":{"d":"}\"{,"}}`: true,
		`{"a":1,"b":2,"a":3}`:                             false,
		`{"x":{"a":1,"a":2}}`:                             false,
		`{"a\u0062":1}`:                                   false, // an escaped name: the walk decides
		strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth):     true,
		strings.Repeat(`[`, MaxDepth+1) + strings.Repeat(`]`, MaxDepth+1): false,
		`{"a":1} {}`: false,
	} {
		if got := clean([]byte(doc)); got != want {
			t.Errorf("clean(%q) = %v, want %v", doc, got, want)
		}
	}
}
