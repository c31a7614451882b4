package cursor_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/cursor"
)

func TestEncodeKeepsTheTokensAlreadyHandedOut(t *testing.T) {
	t.Parallel()
	// The lists encoded their cursors by hand before; a token a client holds must
	// still decode, and a new one must look the same.
	raw := base64.RawURLEncoding.EncodeToString
	require.Equal(t, raw([]byte("v1:4711")), cursor.EncodeSeq("v1", 4711))
	require.Equal(t, raw([]byte("p1:1700000000000000:inv:1:paid")), cursor.Encode("p1", "1700000000000000", "inv:1:paid"))
}

func TestDecodeReturnsWhatEncodeWrote(t *testing.T) {
	t.Parallel()
	fields, ok := cursor.Decode(cursor.Encode("o1", "17", "a:b"), "o1", 2)
	require.True(t, ok)
	require.Equal(t, []string{"17", "a:b"}, fields)
	seq, ok := cursor.DecodeSeq(cursor.EncodeSeq("a1", 42), "a1")
	require.True(t, ok)
	require.EqualValues(t, 42, seq)
}

func TestDecodeRefusesForeignTokens(t *testing.T) {
	t.Parallel()
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, token := range map[string]string{
		"not base64":        "%%%",
		"another version":   cursor.EncodeSeq("v2", 1),
		"another list":      cursor.EncodeSeq("a1", 1),
		"no version at all": raw("1"),
		"too few fields":    cursor.Encode("v1", "1"),
		"an empty field":    cursor.Encode("v1", "1", ""),
		"empty":             "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, ok := cursor.Decode(token, "v1", 2)
			require.False(t, ok)
		})
	}
	for _, token := range []string{raw("v1:0"), raw("v1:-3"), raw("v1:x"), raw("v1:1:2"), raw("v1:")} {
		_, ok := cursor.DecodeSeq(token, "v1")
		require.False(t, ok, "%q", token)
	}
}

func ExampleEncodeSeq() {
	token := cursor.EncodeSeq("v1", 4711)
	seq, ok := cursor.DecodeSeq(token, "v1")
	fmt.Println(token, seq, ok)
	// Output: djE6NDcxMQ 4711 true
}
