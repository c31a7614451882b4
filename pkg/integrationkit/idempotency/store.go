package idempotency

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/uptrace/bun"
)

const (
	stateInFlight = "in_flight"
	stateDone     = "done"
	purgeBatch    = 1000
)

// keyRef names one key of one principal.
type keyRef struct {
	principal string
	key       string
}

// record is a stored key as a later request sees it.
type record struct {
	hash    []byte
	state   string
	status  int
	headers http.Header
	body    []byte
}

// store holds the SQL of the key table. Every time that decides expiry or
// abandonment is the database's, so replicas with skewed clocks agree.
type store struct {
	db    bun.IDB // begins the transactions that hold keys
	table string
}

// hold takes the transaction-level advisory lock of k in tx and reports whether it got
// it (keys are printable ASCII, so a newline separates the parts); another transaction
// holding it is a request with the same key in flight. The
// lock ends with tx, also when its process dies.
func (s store) hold(ctx context.Context, tx bun.Tx, k keyRef) (bool, error) {
	var got bool
	err := tx.NewRaw(`SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))`,
		s.table+"\n"+k.principal+"\n"+k.key).Scan(ctx, &got)
	if err != nil {
		return false, fmt.Errorf("idempotency: hold key: %w", err)
	}
	return got, nil
}

// claim inserts k in_flight in tx for this request, and reports whether it did: a new
// key, an expired one, or a committed in_flight row abandoned for longer than abandon
// (left by a replica that stored keys before committing its change) is claimed; a
// live key is not.
func (s store) claim(ctx context.Context, tx bun.Tx, k keyRef, hash []byte, ttl, abandon time.Duration) (bool, error) {
	var claimed bool
	err := tx.NewRaw(`INSERT INTO ? AS k (principal, key, request_hash, state, locked_at, created_at)
		VALUES (?, ?, ?, 'in_flight', clock_timestamp(), now())
		ON CONFLICT (principal, key) DO UPDATE
		SET request_hash = EXCLUDED.request_hash, state = 'in_flight', response_status = NULL,
			response_headers = NULL, response_body = NULL,
			locked_at = clock_timestamp(), created_at = now()
		WHERE k.created_at < now() - make_interval(secs => ?)
			OR (k.state = 'in_flight' AND k.locked_at < now() - make_interval(secs => ?)
				AND k.request_hash = EXCLUDED.request_hash)
		RETURNING true`,
		bun.Ident(s.table), k.principal, k.key, hash, ttl.Seconds(), abandon.Seconds()).Scan(ctx, &claimed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("idempotency: claim key: %w", err)
	}
	return claimed, nil
}

// lookup returns the unexpired record of k, or false when there is none.
func (s store) lookup(ctx context.Context, db bun.IDB, k keyRef, ttl time.Duration) (record, bool, error) {
	var (
		r       record
		status  sql.NullInt32
		headers []byte
	)
	err := db.NewRaw(`SELECT request_hash, state, response_status, response_headers, response_body
		FROM ? WHERE principal = ? AND key = ? AND created_at >= now() - make_interval(secs => ?)`,
		bun.Ident(s.table), k.principal, k.key, ttl.Seconds()).
		Scan(ctx, &r.hash, &r.state, &status, &headers, &r.body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return record{}, false, nil
	case err != nil:
		return record{}, false, fmt.Errorf("idempotency: look up key: %w", err)
	}
	r.status = int(status.Int32)
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &r.headers); err != nil {
			return record{}, false, fmt.Errorf("idempotency: decode stored headers: %w", err)
		}
	}
	return r, true, nil
}

// complete stores the response of the request that claimed k in tx.
func (s store) complete(ctx context.Context, tx bun.Tx, k keyRef, status int, headers http.Header, body []byte) error {
	encoded, err := json.Marshal(headers)
	if err != nil {
		return fmt.Errorf("idempotency: encode headers: %w", err)
	}
	_, err = tx.NewRaw(`UPDATE ? SET state = 'done', response_status = ?,
			response_headers = ?::jsonb, response_body = ?
		WHERE principal = ? AND key = ?`,
		bun.Ident(s.table), status, string(encoded), body, k.principal, k.key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("idempotency: store response: %w", err)
	}
	return nil
}

// purge deletes keys created more than olderThan ago, in batches so no statement
// holds many row locks for long.
func (s store) purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	var total int64
	for {
		res, err := s.db.NewRaw(`DELETE FROM ? WHERE (principal, key) IN (
				SELECT principal, key FROM ? WHERE created_at < now() - make_interval(secs => ?)
				LIMIT ? FOR UPDATE SKIP LOCKED)`,
			bun.Ident(s.table), bun.Ident(s.table), olderThan.Seconds(), purgeBatch).Exec(ctx)
		if err != nil {
			return total, fmt.Errorf("idempotency: purge: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("idempotency: purge: %w", err)
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}
