package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// ErrNotFound means no event has the given id.
var ErrNotFound = errors.New("outbox: event not found")

// MaxAggregateEvents bounds how many events Aggregate returns.
const MaxAggregateEvents = 200

// StoredEvent is an outbox row as operators see it.
type StoredEvent struct {
	ID             uuid.UUID       `bun:"id"`
	EventType      string          `bun:"event_type"`
	Payload        json.RawMessage `bun:"payload,type:jsonb"`
	IdempotencyKey string          `bun:"idempotency_key"`
	Destination    string          `bun:"destination"`
	AggregateKey   string          `bun:"aggregate_key"`
	Sequence       int64           `bun:"aggregate_seq"`
	CorrelationID  string          `bun:"correlation_id"`
	Status         string          `bun:"delivery_status"`
	// Attempts is how many attempts count against the budget; a replay resets it.
	Attempts int `bun:"delivery_attempts"`
	// Requests is every request ever sent (X-Attempt of the latest); never reset.
	Requests      int        `bun:"request_count"`
	LastAttemptAt *time.Time `bun:"last_attempt_at"`
	NextAttemptAt time.Time  `bun:"next_attempt_at"`
	DeliveredAt   *time.Time `bun:"delivered_at"`
	// SkippedAt is when an operator skipped the event; nil unless it is skipped.
	SkippedAt      *time.Time `bun:"skipped_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	LeaseOwner     string     `bun:"lease_owner"`
	LeaseExpiresAt *time.Time `bun:"lease_expires_at"`
	LastError      string     `bun:"last_error"`
	LastStatusCode int        `bun:"last_status_code"`
	FailedReason   string     `bun:"failed_reason"`
	// DeferredAt is when the destination's open circuit, or a pause, last deferred the
	// event without a request; nil once any other outcome settled it.
	DeferredAt *time.Time `bun:"deferred_at"`
	// DeferredBy names what deferred it (DeferredByCircuit, DeferredByPause).
	DeferredBy string `bun:"deferred_by"`
	// InFlight is true while a dispatcher holds a live lease on the event.
	InFlight bool `bun:"in_flight"`
}

// LastFailure describes the latest failure of the event for a person ("HTTP 400",
// "timeout · dial tcp …"), or "" when its latest attempt did not fail.
func (e StoredEvent) LastFailure() string {
	if e.LastError == "" {
		return ""
	}
	return describe(e.LastStatusCode, "", e.LastError)
}

// eventColumns are the columns of StoredEvent; in_flight is judged by the database clock.
const eventColumns = `id, event_type, payload, idempotency_key, destination, aggregate_key,
	aggregate_seq, correlation_id, delivery_status, delivery_attempts, request_count,
	last_attempt_at, next_attempt_at, delivered_at, skipped_at, created_at, lease_owner, lease_expires_at,
	last_error, last_status_code, failed_reason, deferred_at, deferred_by,
	coalesce(lease_expires_at > now(), false) AS in_flight`

// Attempt is one request sent for an event.
type Attempt struct {
	// No is the request's 1-based number, sent as X-Attempt.
	No        int
	StartedAt time.Time
	Duration  time.Duration
	// StatusCode is the answer's HTTP status; 0 when none came (see ErrorClass).
	StatusCode int
	ErrorClass string
	Error      string
	// ResponseSnippet is the start of the answer's body, at most 1 KiB.
	ResponseSnippet string
	// Outcome is what the attempt decided: delivered, retry, dead_letter, …
	Outcome string
}

// Answer describes how the attempt ended for a person: the HTTP status or the error
// class, followed by the error when it adds something ("HTTP 503", "timeout · …").
func (a Attempt) Answer() string { return describe(a.StatusCode, a.ErrorClass, a.Error) }

func describe(code int, class, msg string) string {
	head := class
	if code != 0 {
		head = fmt.Sprintf("HTTP %d", code)
	}
	switch {
	case msg == "" || msg == head:
		return head
	case head == "":
		return msg
	}
	return head + " · " + msg
}

type attemptRow struct {
	OutboxID        uuid.UUID `bun:"outbox_id"`
	No              int       `bun:"attempt_no"`
	StartedAt       time.Time `bun:"started_at"`
	DurationMS      int64     `bun:"duration_ms"`
	StatusCode      int       `bun:"status_code"`
	ErrorClass      string    `bun:"error_class"`
	Error           string    `bun:"error"`
	ResponseSnippet string    `bun:"response_snippet"`
	Outcome         string    `bun:"outcome"`
}

// EventDetail is an event with every attempt, oldest first.
type EventDetail struct {
	StoredEvent
	AttemptLog []Attempt
}

// EventPage is one page of List; Next, when not nil, continues it.
type EventPage struct {
	Items []StoredEvent
	Next  *Cursor
}

// List returns a page of the events matching f, newest first. A List with the previous
// page's Next as f.After continues where it stopped, however many events arrive.
func (s *Store) List(ctx context.Context, db bun.IDB, f Filter) (EventPage, error) {
	if err := f.normalize(DefaultListLimit, MaxListLimit); err != nil {
		return EventPage{}, err
	}
	var items []StoredEvent
	q := f.apply(s.selectEvents(db, &items)).OrderExpr("created_at DESC, id DESC").Limit(int64(f.Limit) + 1)
	if f.After != nil {
		q = q.Where("(created_at, id) < (?, ?)", f.After.CreatedAt, f.After.ID)
	}
	if err := q.Scan(ctx); err != nil {
		return EventPage{}, fmt.Errorf("outbox: list: %w", err)
	}
	page := EventPage{Items: items}
	if len(items) > f.Limit {
		page.Items = items[:f.Limit]
		last := page.Items[f.Limit-1]
		page.Next = &Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}

// Detail returns the event with its attempts, read in one snapshot, or ErrNotFound.
func (s *Store) Detail(ctx context.Context, db bun.IDB, id uuid.UUID) (EventDetail, error) {
	var out EventDetail
	err := db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		func(ctx context.Context, tx bun.Tx) error {
			err := s.selectEvents(tx, &out.StoredEvent).Where("id = ?", id).Scan(ctx)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			if err != nil {
				return fmt.Errorf("outbox: event %s: %w", id, err)
			}
			log, err := s.Attempts(ctx, tx, id)
			out.AttemptLog = log[id]
			return err
		})
	return out, err
}

// Aggregate returns the events of one aggregate in sequence order, each with its
// attempts (at most MaxAggregateEvents), read in one snapshot.
func (s *Store) Aggregate(ctx context.Context, db bun.IDB, key string) ([]EventDetail, error) {
	var out []EventDetail
	err := db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		func(ctx context.Context, tx bun.Tx) error {
			var events []StoredEvent
			err := s.selectEvents(tx, &events).Where("aggregate_key = ?", key).
				OrderExpr("aggregate_seq").Limit(MaxAggregateEvents).Scan(ctx)
			if err != nil {
				return fmt.Errorf("outbox: aggregate %q: %w", key, err)
			}
			ids := make([]uuid.UUID, len(events))
			for i, ev := range events {
				ids[i] = ev.ID
			}
			logs, err := s.Attempts(ctx, tx, ids...)
			out = make([]EventDetail, len(events))
			for i, ev := range events {
				out[i] = EventDetail{StoredEvent: ev, AttemptLog: logs[ev.ID]}
			}
			return err
		})
	return out, err
}

// Attempts returns the attempts of the given events, oldest first, by event id.
func (s *Store) Attempts(ctx context.Context, db bun.IDB, ids ...uuid.UUID) (map[uuid.UUID][]Attempt, error) {
	out := make(map[uuid.UUID][]Attempt, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []attemptRow
	err := db.NewSelect().Model(&rows).ModelTableExpr("?", bun.Ident(s.attempts)).
		ColumnExpr(`outbox_id, attempt_no, started_at, duration_ms, status_code, error_class, error,
			response_snippet, outcome`).
		Where("outbox_id IN (?)", bun.List(ids)).OrderExpr("outbox_id, attempt_no").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: attempts: %w", err)
	}
	for _, r := range rows {
		out[r.OutboxID] = append(out[r.OutboxID], Attempt{
			No: r.No, StartedAt: r.StartedAt, Duration: time.Duration(r.DurationMS) * time.Millisecond,
			StatusCode: r.StatusCode, ErrorClass: r.ErrorClass, Error: r.Error,
			ResponseSnippet: r.ResponseSnippet, Outcome: r.Outcome,
		})
	}
	return out, nil
}

// selectEvents starts a query of StoredEvent columns from the table into dst.
func (s *Store) selectEvents(db bun.IDB, dst any) *bun.SelectQuery {
	return db.NewSelect().Model(dst).ModelTableExpr("?", bun.Ident(s.table)).ColumnExpr(eventColumns)
}
