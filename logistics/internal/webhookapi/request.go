package webhookapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/wire"
)

// HeaderIdempotencyKey carries the sender's stable key of one event.
const HeaderIdempotencyKey = "X-Idempotency-Key"

// Limits on what the webhook accepts. MaxBodyBytes also bounds each event of a batch.
// An idempotency key's limits are package wire's (wire.CheckKey).
const (
	MaxBodyBytes      = 1 << 20
	MaxBatchBodyBytes = 8 << 20
)

// readBody reads at most limit bytes of the request body; a longer body, announced
// or actual, is a 413 and is not read further. MaxBytesReader also tells the server
// to close the connection after answering, so the rest of the body is never read.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	req := c.Request()
	if req.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response().Writer, req.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, problem.New(http.StatusBadRequest, "unreadable-body", "the request body could not be read")
	}
	return body, nil
}

func tooLarge(limit int64) *problem.Problem {
	return problem.Newf(http.StatusRequestEntityTooLarge, "body-too-large", "the body exceeds %d bytes", limit)
}

// checkContentType admits application/json, optionally with charset=utf-8.
func checkContentType(header string) error {
	mt, params, err := mime.ParseMediaType(header)
	ok := err == nil && mt == "application/json"
	for name, value := range params {
		ok = ok && name == "charset" && strings.EqualFold(value, "utf-8")
	}
	if !ok {
		return problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type",
			"the body must be application/json (charset utf-8)")
	}
	return nil
}

// idempotencyKey returns the one X-Idempotency-Key of h, a key wire.CheckKey accepts.
func idempotencyKey(h http.Header) (string, error) {
	values := h.Values(HeaderIdempotencyKey)
	if len(values) != 1 {
		return "", badKey("exactly one %s header is required", HeaderIdempotencyKey)
	}
	if err := checkKey(HeaderIdempotencyKey, values[0]); err != nil {
		return "", err
	}
	return values[0], nil
}

// checkKey admits an idempotency key wire.CheckKey accepts: 1 to wire.MaxKeyBytes
// bytes of printable ASCII without surrounding spaces; name says where the key came
// from.
func checkKey(name, key string) *problem.Problem {
	if err := wire.CheckKey(key); err != nil {
		return badKey("%s %v", name, err)
	}
	return nil
}

func badKey(format string, args ...any) *problem.Problem {
	return problem.New(http.StatusBadRequest, "invalid-idempotency-key", fmt.Sprintf(format, args...))
}
