package inbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Canonicalize returns raw, one JSON value, in a canonical form: object keys sorted,
// insignificant whitespace removed and strings re-escaped uniformly, so two encodings
// of the same document give the same bytes. Numbers keep their literal text (1 and
// 1.0 stay different), which is what a sender that re-sends the same bytes produces.
func Canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("inbox: canonicalize: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("inbox: canonicalize: data after the JSON value")
	}
	c, err := encode(v)
	if err != nil {
		return nil, fmt.Errorf("inbox: canonicalize: %w", err)
	}
	return c, nil
}

// encode is the canonical form of a decoded value: encoding/json's (keys sorted, no
// insignificant whitespace) without HTML escaping, and without the final newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// HashJSON returns the SHA-256 of raw's canonical form (see Canonicalize), the
// payload hash of an Item whose request body is JSON.
func HashJSON(raw []byte) ([]byte, error) {
	c, err := Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	return sum[:], nil
}

// Hash is HashJSON of v's JSON encoding. Fields of type json.RawMessage are
// canonicalized too, so v may carry parts of a request verbatim.
//
// v should hold what makes the request the fact it is, and nothing its sender may
// choose afresh when it sends the same fact again: not an envelope's message id or
// timestamp, which a sender restored from a backup re-creates; otherwise that re-send
// is refused as ErrKeyReuse instead of answered as a duplicate.
func Hash(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("inbox: hash: %w", err)
	}
	return HashJSON(raw)
}

// HashDecoded is Hash for v made only of what encoding/json decodes into an interface
// with UseNumber on: map[string]any, []any, string, json.Number, bool and nil, such
// as the parts of a request decoded that way. Such a v is already in canonical form
// but for its encoding, so HashDecoded encodes it once, where Hash encodes, decodes
// and encodes again; the sum is the same.
func HashDecoded(v any) ([]byte, error) {
	c, err := encode(v)
	if err != nil {
		return nil, fmt.Errorf("inbox: hash: %w", err)
	}
	sum := sha256.Sum256(c)
	return sum[:], nil
}
