package inbox_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/inbox"
)

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"sorted keys", `{"b":1,"a":{"d":2,"c":3}}`, `{"a":{"c":3,"d":2},"b":1}`},
		{"whitespace", " [ 1 ,\n 2 ] \n", `[1,2]`},
		{"escapes", `"\u0041<&>"`, `"A<&>"`},
		{"numbers keep their text", `[1, 1.0, 1e2, 12345678901234567890]`, `[1,1.0,1e2,12345678901234567890]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := inbox.Canonicalize([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestCanonicalizeRejectsInvalidJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `{} {}`, `{"a":1}x`, `nul`} {
		_, err := inbox.Canonicalize([]byte(in))
		require.Error(t, err, in)
	}
}

func TestHashIgnoresEncodingDifferences(t *testing.T) {
	t.Parallel()
	a, err := inbox.HashJSON([]byte(`{"id":"x","n":[1,2]}`))
	require.NoError(t, err)
	b, err := inbox.Hash(map[string]any{"n": []int{1, 2}, "id": "x"})
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b))
	require.Len(t, a, 32)

	c, err := inbox.Hash(map[string]any{"n": []int{2, 1}, "id": "x"})
	require.NoError(t, err)
	require.False(t, bytes.Equal(a, c))
}

// FuzzHashDecodedIsHash decodes documents as HashDecoded's callers do (an interface,
// UseNumber on) and checks that HashDecoded gives Hash's sum.
func FuzzHashDecodedIsHash(f *testing.F) {
	for _, seed := range []string{
		`{"type":"invoice.paid","sequence":2,"data":{"total_minor":1250,"note":"<a&b>","x":[1.0,1e2,-0,null,true]}}`,
		`{"s":"\u2028\u2029\ud800 \u00e9 \\ \" \/ \t"}`, `[12345678901234567890, 0.1]`, `"x"`, `{}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		want, err := inbox.Hash(v)
		require.NoError(t, err)
		got, err := inbox.HashDecoded(v)
		require.NoError(t, err)
		require.Equal(t, want, got, "%q", doc)
	})
}
