package reconcile

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Tables of finance that reconciliation reads and writes.
const (
	outboxTable  = "finance_outbox"
	archiveTable = "finance_outbox_archive"
	resultsTable = "finance_reconciliations"
)

// store holds the SQL of reconciliation.
type store struct {
	db bun.IDB
}

// delivered is an event finance marked delivered.
type delivered struct {
	Key         string    `bun:"idempotency_key"`
	EventID     string    `bun:"id"`
	Aggregate   string    `bun:"aggregate_key"`
	CreatedAt   time.Time `bun:"created_at"`
	DeliveredAt time.Time `bun:"delivered_at"`
}

// delivered returns the events delivered in [from, to), the archived ones included.
func (s store) delivered(ctx context.Context, from, to time.Time) ([]delivered, error) {
	var out []delivered
	err := s.db.NewRaw(`
		SELECT idempotency_key, id::text AS id, aggregate_key, created_at, delivered_at FROM ?
		WHERE delivery_status = 'delivered' AND delivered_at >= ? AND delivered_at < ?
		UNION ALL
		SELECT idempotency_key, id::text AS id, aggregate_key, created_at, delivered_at FROM ?
		WHERE delivered_at >= ? AND delivered_at < ?`,
		bun.Ident(outboxTable), from, to, bun.Ident(archiveTable), from, to).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("reconcile: delivered events: %w", err)
	}
	return out, nil
}

// known returns which of keys finance has an event for, in any state.
func (s store) known(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var found []string
	err := s.db.NewRaw(`
		SELECT idempotency_key FROM ? WHERE idempotency_key IN (?)
		UNION SELECT idempotency_key FROM ? WHERE idempotency_key IN (?)`,
		bun.Ident(outboxTable), bun.List(keys), bun.Ident(archiveTable), bun.List(keys)).Scan(ctx, &found)
	if err != nil {
		return nil, fmt.Errorf("reconcile: look up keys: %w", err)
	}
	for _, k := range found {
		out[k] = true
	}
	return out, nil
}

// skipped counts the events operators skipped in [from, to).
func (s store) skipped(ctx context.Context, from, to time.Time) (int, error) {
	var n int
	err := s.db.NewRaw(`SELECT count(*) FROM ? WHERE delivery_status = 'skipped' AND skipped_at >= ? AND skipped_at < ?`,
		bun.Ident(outboxTable), from, to).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("reconcile: skipped events: %w", err)
	}
	return n, nil
}

// overdue returns pending events whose next attempt is more than late ago (at most
// MaxListed, oldest first) and how many there are.
func (s store) overdue(ctx context.Context, late time.Duration) ([]Discrepancy, int, error) {
	var rows []struct {
		Key       string    `bun:"idempotency_key"`
		ID        string    `bun:"id"`
		Aggregate string    `bun:"aggregate_key"`
		Next      time.Time `bun:"next_attempt_at"`
		LastError string    `bun:"last_error"`
		Total     int       `bun:"total"`
	}
	err := s.db.NewRaw(`
		SELECT idempotency_key, id::text AS id, aggregate_key, next_attempt_at,
		       coalesce(last_error, '') AS last_error, count(*) OVER () AS total
		FROM ? WHERE delivery_status = 'pending' AND next_attempt_at < now() - make_interval(secs => ?)
		ORDER BY next_attempt_at LIMIT ?`,
		bun.Ident(outboxTable), late.Seconds(), MaxListed).Scan(ctx, &rows)
	if err != nil {
		return nil, 0, fmt.Errorf("reconcile: overdue events: %w", err)
	}
	out := make([]Discrepancy, len(rows))
	total := 0
	for i, r := range rows {
		detail := "due since " + r.Next.UTC().Format(time.RFC3339)
		if r.LastError != "" {
			detail += "; last error: " + r.LastError
		}
		out[i] = Discrepancy{IdempotencyKey: r.Key, EventID: r.ID, InvoiceID: r.Aggregate, At: r.Next, Detail: detail}
		total = r.Total
	}
	return out, total, nil
}

// result is a row of finance_reconciliations.
type result struct {
	ID           int64           `bun:"id"`
	StartedAt    time.Time       `bun:"started_at"`
	FinishedAt   time.Time       `bun:"finished_at"`
	From         time.Time       `bun:"window_from"`
	To           time.Time       `bun:"window_to"`
	Delivered    int             `bun:"delivered_count"`
	Processed    int             `bun:"processed_count"`
	Skipped      int             `bun:"skipped_count"`
	MissingCount int             `bun:"missing_count"`
	UnknownCount int             `bun:"unknown_count"`
	OverdueCount int             `bun:"overdue_count"`
	Missing      json.RawMessage `bun:"missing,type:jsonb"`
	Unknown      json.RawMessage `bun:"unknown,type:jsonb"`
	Overdue      json.RawMessage `bun:"overdue,type:jsonb"`
	Error        sql.NullString  `bun:"error"`
}

// save stores r and returns its id and finishing time.
func (s store) save(ctx context.Context, r Report) (int64, time.Time, error) {
	lists := make([]string, 3)
	for i, l := range [][]Discrepancy{r.Missing, r.Unknown, r.Overdue} {
		b, err := json.Marshal(append([]Discrepancy{}, listed(l)...))
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("reconcile: encode report: %w", err)
		}
		lists[i] = string(b)
	}
	var row struct {
		ID         int64     `bun:"id"`
		FinishedAt time.Time `bun:"finished_at"`
	}
	err := s.db.NewRaw(`
		INSERT INTO ? (started_at, window_from, window_to, delivered_count, processed_count, skipped_count,
			missing_count, unknown_count, overdue_count, missing, unknown, overdue, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, NULLIF(?, ''))
		RETURNING id, finished_at`,
		bun.Ident(resultsTable), r.StartedAt, r.From, r.To, r.Delivered, r.Processed, r.Skipped,
		r.MissingCount, r.UnknownCount, r.OverdueCount, lists[0], lists[1], lists[2], r.Error).Scan(ctx, &row)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("reconcile: save report: %w", err)
	}
	return row.ID, row.FinishedAt, nil
}

// Latest returns the newest stored reconciliation; ok is false when none ran yet. The
// dashboard shows it.
func Latest(ctx context.Context, db bun.IDB) (r Report, ok bool, err error) {
	var row result
	err = db.NewRaw(`SELECT id, started_at, finished_at, window_from, window_to, delivered_count,
			processed_count, skipped_count, missing_count, unknown_count, overdue_count, missing, unknown, overdue, error
		FROM ? ORDER BY id DESC LIMIT 1`, bun.Ident(resultsTable)).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return Report{}, false, nil
	}
	if err != nil {
		return Report{}, false, fmt.Errorf("reconcile: latest report: %w", err)
	}
	r = Report{ID: row.ID, StartedAt: row.StartedAt, FinishedAt: row.FinishedAt, From: row.From, To: row.To,
		Delivered: row.Delivered, Processed: row.Processed, Skipped: row.Skipped, MissingCount: row.MissingCount,
		UnknownCount: row.UnknownCount, OverdueCount: row.OverdueCount, Error: row.Error.String}
	for _, l := range []struct {
		raw json.RawMessage
		dst *[]Discrepancy
	}{{row.Missing, &r.Missing}, {row.Unknown, &r.Unknown}, {row.Overdue, &r.Overdue}} {
		if err := json.Unmarshal(l.raw, l.dst); err != nil {
			return Report{}, false, fmt.Errorf("reconcile: decode report %d: %w", row.ID, err)
		}
	}
	return r, true, nil
}
