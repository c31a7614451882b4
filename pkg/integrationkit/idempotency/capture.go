package idempotency

import (
	"bytes"
	"net/http"
	"slices"
)

// recorder captures a handler's response instead of sending it. Headers go straight
// into the real writer's header map, which is sent once the response is stored.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// unstored headers describe one transfer, not the response, and are never replayed.
var unstored = []string{"Content-Length", "Date", "Connection", "Keep-Alive", "Transfer-Encoding", "Trailer"}

// handlerHeaders returns the headers the handler set or changed: those present
// before it ran (a request id, say) belong to each request and are not replayed.
func handlerHeaders(before, after http.Header) http.Header {
	out := http.Header{}
	for name, values := range after {
		if slices.Contains(unstored, name) || slices.Equal(before[name], values) {
			continue
		}
		out[name] = slices.Clone(values)
	}
	return out
}
