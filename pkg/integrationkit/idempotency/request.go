package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
)

// parseKey accepts exactly one key of 1 to MaxKeyLength printable ASCII characters.
func parseKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", invalidKey("send exactly one Idempotency-Key header")
	}
	key := values[0]
	if key == "" || len(key) > MaxKeyLength {
		return "", invalidKey(fmt.Sprintf("the Idempotency-Key must be 1 to %d characters", MaxKeyLength))
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", invalidKey("the Idempotency-Key must be printable ASCII")
		}
	}
	return key, nil
}

func invalidKey(detail string) error {
	return problem.New(http.StatusBadRequest, "idempotency-key-invalid", detail)
}

// hashRequest reads the body (at most limit bytes), puts it back for the handler and
// returns the SHA-256 of method, request URI and body. NUL cannot occur in the method
// or the URI, so it separates the parts unambiguously.
func hashRequest(c echo.Context, limit int64) ([]byte, error) {
	req := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, problem.Newf(http.StatusRequestEntityTooLarge, "body-too-large",
				"the request body exceeds %d bytes", limit)
		}
		return nil, fmt.Errorf("idempotency: read body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	h := sha256.New()
	h.Write([]byte(req.Method))
	h.Write([]byte{0})
	h.Write([]byte(req.URL.RequestURI()))
	h.Write([]byte{0})
	h.Write(canonical(body))
	return h.Sum(nil), nil
}

// canonical returns body as canonical JSON (members sorted, no insignificant white
// space, numbers as written), so a client that re-serialises the same request is
// not taken for one that changed it; a body that is not one JSON value is hashed as
// it is.
func canonical(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return body
	}
	if _, err := dec.Token(); err != io.EOF {
		return body
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}
