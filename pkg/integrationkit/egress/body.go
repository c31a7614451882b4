package egress

import (
	"errors"
	"fmt"
	"io"
)

// ErrBodyTooLarge is the error of ReadBody for a body longer than its limit.
var ErrBodyTooLarge = errors.New("egress: response body too large")

// ReadBody reads body, but never more than limit+1 bytes of it: a body of at most
// limit bytes is returned whole, a longer one as its first limit bytes with an error
// wrapping ErrBodyTooLarge. A read that fails returns what came before the failure and
// the error. The caller still closes the body.
func ReadBody(body io.Reader, limit int64) ([]byte, error) {
	limit = max(limit, 0)
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if int64(len(data)) > limit {
		return data[:limit], fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, limit)
	}
	return data, err
}
