package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/problem"
)

// settleTimeout bounds storing the answer and committing after the handler ran. It
// runs detached from the request, so a client that hangs up still gets the stored
// answer when it retries.
const settleTimeout = 5 * time.Second

// serve holds the key in a transaction and runs the handler inside it, or answers from
// the existing record.
//
// The key is held by the transaction itself: a transaction-level advisory lock on it
// (a second request with the same key finds it taken and gets 409 at once), and its
// in_flight row, inserted in the transaction and never visible to anybody else. The
// handler's changes join the transaction (pgdb.RunInTx on the request's context), and
// the response is stored in it before the commit. So a change and the answer that
// reports it commit together or not at all; a request whose process dies mid-way
// leaves nothing behind, and a retry runs afresh at once, with no abandonment window.
func (m *Middleware) serve(c echo.Context, next echo.HandlerFunc, k keyRef, hash []byte) error {
	// Detached from the client, bounded by AbandonAfter: the request holds its key no
	// longer than that, and a client that hangs up gets the answer on its retry.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), m.cfg.AbandonAfter)
	defer cancel()
	tx, err := m.store.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("idempotency: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after the commit
	held, err := m.store.hold(ctx, tx, k)
	if err != nil {
		return err
	}
	if !held {
		return inFlight()
	}
	claimed, err := m.store.claim(ctx, tx, k, hash, m.cfg.TTL, m.cfg.AbandonAfter)
	if err != nil {
		return err
	}
	if !claimed {
		rec, found, err := m.store.lookup(ctx, tx, k, m.cfg.TTL)
		if err != nil {
			return err
		}
		if !found {
			return inFlight() // an in_flight row of a replica without this lock; it expires
		}
		return answer(c, rec, hash)
	}
	return m.run(c, next, ctx, tx, k)
}

// answer responds to a request whose key is already done (or held by an older
// replica's committed in_flight row).
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

// run executes the handler inside tx, which holds the key. The response is captured
// (errors rendered by the echo error handler included) and, unless it is a server
// error, stored in tx and committed, and only then sent; the handler's changes are
// kept with a success and dropped with a 4xx (they run under a savepoint). A 5xx, a
// failure to store or commit, or a panic rolls tx back, change and key alike, so a
// retry runs the request again.
func (m *Middleware) run(c echo.Context, next echo.HandlerFunc, ctx context.Context, tx bun.Tx, k keyRef) error {
	handlerTx, err := tx.BeginTx(ctx, nil) // a savepoint: a 4xx answer keeps no change
	if err != nil {
		return fmt.Errorf("idempotency: savepoint: %w", err)
	}
	req := c.Request()
	c.SetRequest(req.WithContext(pgdb.WithTx(ctx, handlerTx)))
	defer c.SetRequest(req)

	res := c.Response()
	orig := res.Writer
	before := orig.Header().Clone()
	rec := &recorder{header: orig.Header()}
	res.Writer = rec
	handled := false
	defer func() {
		res.Writer = orig
		if !handled {
			// The handler panicked and nothing reached the client: let recovery answer
			// (the deferred rollback frees the key).
			res.Committed = false
		}
	}()
	if err := next(c); err != nil {
		c.Error(err)
	}
	handled = true
	res.Writer = orig
	c.SetRequest(req)

	status := cmp.Or(rec.status, http.StatusOK)
	headers := handlerHeaders(before, orig.Header())
	if status >= http.StatusInternalServerError {
		_ = tx.Rollback() // free the key before the answer: the client's retry may come at once
	} else {
		if err := m.commit(ctx, tx, handlerTx, k, status, headers, rec.body.Bytes()); err != nil {
			for name := range headers { // neither the change nor its answer committed
				orig.Header().Del(name)
			}
			res.Committed = false // nothing was sent: the error handler answers
			return err
		}
	}
	orig.WriteHeader(status)
	res.Status, res.Committed = status, true
	n, err := orig.Write(rec.body.Bytes())
	res.Size += int64(n)
	return err
}

// commit keeps the handler's changes (handlerTx) if its answer is a success and drops
// them if it is a 4xx, stores the answer in tx and commits. On failure nothing of tx
// committed (or, when the commit's outcome is unknown, a retry finds the stored answer
// or a free key) and the error to answer with is returned.
func (m *Middleware) commit(ctx context.Context, tx, handlerTx bun.Tx, k keyRef, status int, headers http.Header, body []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var err error
	if status < http.StatusBadRequest {
		err = handlerTx.Commit() // RELEASE SAVEPOINT
	} else {
		err = handlerTx.Rollback() // ROLLBACK TO SAVEPOINT
	}
	if err == nil {
		err = m.store.complete(ctx, tx, k, status, headers, body)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		m.cfg.Logger.ErrorContext(ctx, "idempotency: answer not stored; the change was rolled back", "err", err)
		p := problem.New(http.StatusServiceUnavailable, "idempotency-answer-not-stored",
			"the request could not be completed; retry with the same Idempotency-Key")
		p.RetryAfter = time.Second
		return p
	}
	return nil
}

// Purge deletes keys created more than olderThan ago and returns how many it deleted.
// Run it on a schedule with the configured TTL; it deletes in small batches.
func (m *Middleware) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return m.store.purge(ctx, olderThan)
}
