package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
)

// maxClaimTries bounds the claim-then-look-up loop: a key can vanish between the two
// statements (its first request failed with a 5xx and released it), and claiming
// again is then right, but not forever.
const maxClaimTries = 3

// settleTimeout bounds storing or releasing a key after the handler ran. It runs
// detached from the request, so a client that hangs up does not strand its key.
const settleTimeout = 5 * time.Second

// serve claims the key and runs the handler, or answers from the existing record.
func (m *Middleware) serve(c echo.Context, next echo.HandlerFunc, k keyRef, hash []byte) error {
	ctx := c.Request().Context()
	for range maxClaimTries {
		token, claimed, err := m.store.acquire(ctx, k, hash, m.cfg.TTL, m.cfg.AbandonAfter)
		if err != nil {
			return err
		}
		if claimed {
			return m.run(c, next, k, token)
		}
		rec, found, err := m.store.lookup(ctx, k, m.cfg.TTL)
		if err != nil {
			return err
		}
		if found {
			return answer(c, rec, hash)
		}
	}
	return inFlight()
}

// answer responds to a request whose key is already held or done.
func answer(c echo.Context, rec record, hash []byte) error {
	switch {
	case !bytes.Equal(rec.hash, hash):
		return problem.New(http.StatusUnprocessableEntity, "idempotency-key-reused",
			"this Idempotency-Key was already used with a different request")
	case rec.state != stateDone:
		return inFlight()
	}
	return replay(c, rec)
}

func inFlight() error {
	p := problem.New(http.StatusConflict, "idempotency-key-in-flight",
		"a request with this Idempotency-Key is still being processed; retry later")
	p.RetryAfter = time.Second
	return p
}

// replay sends the stored response as it was first sent.
func replay(c echo.Context, rec record) error {
	res := c.Response()
	maps.Copy(res.Header(), rec.headers)
	res.Header().Set(HeaderReplayed, "true")
	res.WriteHeader(rec.status)
	_, err := res.Write(rec.body)
	return err
}

// run executes the handler while holding the key. The response is captured (errors
// rendered by the echo error handler included), stored unless it is a server error,
// and only then sent. A 5xx, a failure to store, or a panic releases the key so a
// retry can run the request again.
func (m *Middleware) run(c echo.Context, next echo.HandlerFunc, k keyRef, token time.Time) error {
	res := c.Response()
	orig := res.Writer
	before := orig.Header().Clone()
	rec := &recorder{header: orig.Header()}
	res.Writer = rec
	handled := false
	defer func() {
		res.Writer = orig
		if !handled {
			// The handler panicked and nothing reached the client: let recovery answer.
			res.Committed = false
			m.release(c, k, token)
		}
	}()
	if err := next(c); err != nil {
		c.Error(err)
	}
	handled = true
	res.Writer = orig

	status := cmp.Or(rec.status, http.StatusOK)
	body := rec.body.Bytes()
	if status >= http.StatusInternalServerError ||
		!m.complete(c, k, token, status, handlerHeaders(before, orig.Header()), body) {
		m.release(c, k, token)
	}
	orig.WriteHeader(status)
	res.Status, res.Committed = status, true
	n, err := orig.Write(body)
	res.Size += int64(n)
	return err
}

// complete stores the response and reports whether it is stored under this request.
func (m *Middleware) complete(c echo.Context, k keyRef, token time.Time, status int, headers http.Header, body []byte) bool {
	ctx, cancel := settleContext(c)
	defer cancel()
	stored, err := m.store.complete(ctx, k, token, status, headers, body)
	if err != nil {
		m.cfg.Logger.ErrorContext(ctx, "idempotency: response not stored; a retry will run the request again", "err", err)
		return false
	}
	if !stored {
		m.cfg.Logger.WarnContext(ctx, "idempotency: key was taken over before the response was stored",
			"abandon_after", m.cfg.AbandonAfter)
	}
	return stored
}

// release frees the key so a retry runs the request again.
func (m *Middleware) release(c echo.Context, k keyRef, token time.Time) {
	ctx, cancel := settleContext(c)
	defer cancel()
	if err := m.store.release(ctx, k, token); err != nil {
		m.cfg.Logger.ErrorContext(ctx, "idempotency: key not released; retries get 409 until it is abandoned", "err", err)
	}
}

func settleContext(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.Request().Context()), settleTimeout)
}

// Purge deletes keys created more than olderThan ago and returns how many it deleted.
// Run it on a schedule with the configured TTL; it deletes in small batches.
func (m *Middleware) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return m.store.purge(ctx, olderThan)
}
