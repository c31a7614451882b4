package pager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// store reads and writes the alert table. Every time comes from the database's clock,
// so replicas agree on windows and rate limits.
type store struct {
	table string
}

// sample is the latest occurrence of a key, kept as JSON.
type sample struct {
	EventID   string `json:"event_id,omitempty"`
	Aggregate string `json:"aggregate,omitempty"`
	Error     string `json:"error,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// record adds e's occurrences to its key. A key with nothing unsent starts a new
// window and becomes due after gather, or when its last message's Repeat is over.
func (s store) record(ctx context.Context, db bun.IDB, e *entry, gather time.Duration) error {
	a := e.latest
	smp, err := json.Marshal(sample{EventID: a.EventID, Aggregate: a.Aggregate, Error: a.Error, Detail: a.Detail})
	if err != nil {
		return fmt.Errorf("pager: encode sample: %w", err)
	}
	_, err = db.NewRaw(`
		INSERT INTO ? AS a (alert_key, kind, title, unsent_count, total_count, sample, next_send_after)
		VALUES (?, ?, ?, ?, ?, ?::jsonb, now() + make_interval(secs => ?))
		ON CONFLICT (alert_key) DO UPDATE SET
			kind = excluded.kind, title = excluded.title, sample = excluded.sample,
			unsent_count = a.unsent_count + excluded.unsent_count,
			total_count = a.total_count + excluded.total_count,
			last_seen_at = now(),
			window_started_at = CASE WHEN a.unsent_count = 0 THEN now() ELSE a.window_started_at END,
			next_send_after = CASE WHEN a.unsent_count = 0
				THEN greatest(a.next_send_after, excluded.next_send_after) ELSE a.next_send_after END`,
		bun.Ident(s.table), a.Key, a.Kind, a.Title, e.count, e.count, string(smp), gather.Seconds()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("pager: record %s: %w", a.Key, err)
	}
	return nil
}

// due is a claimed alert ready to be sent.
type due struct {
	Key        string          `bun:"alert_key"`
	Kind       string          `bun:"kind"`
	Title      string          `bun:"title"`
	Count      int64           `bun:"unsent_count"`
	Total      int64           `bun:"total_count"`
	Sample     json.RawMessage `bun:"sample,type:jsonb"`
	WindowSecs float64         `bun:"window_secs"`
	Failures   int             `bun:"send_failures"`
	Token      uuid.UUID       `bun:"claim_token"`
}

// claim takes up to limit due alerts for lease, so that one replica sends each.
func (s store) claim(ctx context.Context, db bun.IDB, limit int, lease time.Duration) ([]due, error) {
	var out []due
	err := db.NewRaw(`
		WITH d AS (
			SELECT alert_key FROM ?
			WHERE unsent_count > 0 AND next_send_after <= now()
			  AND (claim_expires_at IS NULL OR claim_expires_at < now())
			ORDER BY next_send_after LIMIT ? FOR UPDATE SKIP LOCKED
		)
		UPDATE ? AS a SET claim_token = gen_random_uuid(),
			claim_expires_at = now() + make_interval(secs => ?)
		FROM d WHERE a.alert_key = d.alert_key
		RETURNING a.alert_key, a.kind, a.title, a.unsent_count, a.total_count, a.sample,
			EXTRACT(EPOCH FROM now() - a.window_started_at)::float8 AS window_secs,
			a.send_failures, a.claim_token`,
		bun.Ident(s.table), limit, bun.Ident(s.table), lease.Seconds()).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("pager: claim: %w", err)
	}
	return out, nil
}

// sent marks d's occurrences as sent; later ones stay unsent for the next window,
// which cannot be sent before repeat is over.
func (s store) sent(ctx context.Context, db bun.IDB, d due, repeat time.Duration) error {
	_, err := db.NewRaw(`UPDATE ? SET unsent_count = unsent_count - ?, sent_at = now(),
			window_started_at = now(), next_send_after = now() + make_interval(secs => ?),
			send_failures = 0, last_send_error = NULL, claim_token = NULL, claim_expires_at = NULL
		WHERE alert_key = ? AND claim_token = ?`,
		bun.Ident(s.table), d.Count, repeat.Seconds(), d.Key, d.Token).Exec(ctx)
	if err != nil {
		return fmt.Errorf("pager: mark sent %s: %w", d.Key, err)
	}
	return nil
}

// failed keeps d unsent and due again after retryIn.
func (s store) failed(ctx context.Context, db bun.IDB, d due, sendErr error, retryIn time.Duration) error {
	_, err := db.NewRaw(`UPDATE ? SET send_failures = send_failures + 1, last_send_error = ?,
			next_send_after = now() + make_interval(secs => ?), claim_token = NULL, claim_expires_at = NULL
		WHERE alert_key = ? AND claim_token = ?`,
		bun.Ident(s.table), truncate(sendErr.Error(), 500), retryIn.Seconds(), d.Key, d.Token).Exec(ctx)
	if err != nil {
		return fmt.Errorf("pager: mark failed %s: %w", d.Key, err)
	}
	return nil
}

// nextDue returns how long until the earliest unsent alert is due; false when none.
func (s store) nextDue(ctx context.Context, db bun.IDB) (time.Duration, bool, error) {
	var secs *float64
	err := db.NewRaw(`SELECT EXTRACT(EPOCH FROM min(next_send_after) - now())::float8 FROM ?
		WHERE unsent_count > 0`, bun.Ident(s.table)).Scan(ctx, &secs)
	if err != nil {
		return 0, false, fmt.Errorf("pager: next due: %w", err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}
