// Package outbox is the transactional outbox: a service writes an event in the same
// transaction as its business change (Enqueue takes the caller's bun.IDB), and a
// dispatcher later claims, leases and settles it. Operators inspect it (Stats, List,
// Detail, Aggregate), replay dead letters (Retry, RetryMatching), give them up (Skip,
// SkipMatching), send a delivered event again (Resend) and move undelivered events to
// another destination (Retarget) through the same Store.
//
// The table, named by the service (e.g. finance_outbox), and its attempt log
// <name>_attempts have the shape Schema returns, with the partial indexes the claim
// relies on: the head test (an earlier event pending or failed) probes the index of
// undelivered rows.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
)

// Status values of delivery_status. Pending and failed events are undelivered: they
// hold back the later events of their aggregate. Delivered and skipped ones are done.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
	// StatusSkipped is a dead letter an operator gave up (Skip): never sent again, and
	// its aggregate's later events go on as if it had been delivered.
	StatusSkipped = "skipped"
)

// ErrDuplicate means an event with the same idempotency key is already stored:
// the second copy was not written.
var ErrDuplicate = errors.New("outbox: event with this idempotency key already exists")

// Event is what a service hands the outbox. The kit knows nothing of its meaning.
type Event struct {
	// Type names the event, e.g. "order.created".
	Type string
	// AggregateKey groups events that must be delivered in order (one business object).
	AggregateKey string
	// Sequence is the event's 1-based position within its aggregate. The caller assigns
	// it while holding the aggregate's row lock in the writing transaction, so a later
	// event can never commit before an earlier one.
	Sequence int64
	// IdempotencyKey is sent as X-Idempotency-Key on every attempt; stable and unique.
	IdempotencyKey string
	// Destination is the URL the event is delivered to.
	Destination string
	// Payload is marshalled to JSON and delivered as the envelope's data.
	Payload any
	// CorrelationID ties the event to the request that caused it (logs, X-Request-ID).
	CorrelationID string
}

// tracerScope names the outbox's spans' instrumentation.
const tracerScope = "handoff/pkg/integrationkit/outbox"

// Store reads and writes one outbox table.
type Store struct {
	table    string
	attempts string
	channel  string
	sql      statements
}

// NewStore returns the store of table; NOTIFY goes to a channel of the same name.
func NewStore(table string) (*Store, error) {
	if !pgdb.ValidIdentifier(table) {
		return nil, fmt.Errorf("outbox: table name %q is not a plain lowercase identifier", table)
	}
	return &Store{table: table, attempts: table + "_attempts", channel: table, sql: newStatements(table)}, nil
}

// Table is the outbox table's name.
func (s *Store) Table() string { return s.table }

// Channel is the LISTEN/NOTIFY channel that Enqueue notifies.
func (s *Store) Channel() string { return s.channel }

// Enqueue writes ev in the caller's transaction and notifies dispatchers; the notice
// is delivered by PostgreSQL only when that transaction commits.
//
// Under a traced request (ctx carries a span) the write is an "outbox.enqueue" span of
// that trace, and the row keeps the span's traceparent: the dispatcher's spans and the
// delivery continue from it. Under none the column stays NULL and nothing else is done.
func (s *Store) Enqueue(ctx context.Context, db bun.IDB, ev Event) (id uuid.UUID, err error) {
	if ev.Type == "" || ev.AggregateKey == "" || ev.IdempotencyKey == "" || ev.Destination == "" || ev.Sequence < 1 {
		return uuid.Nil, fmt.Errorf("outbox: event needs type, aggregate key, sequence ≥ 1, idempotency key and destination")
	}
	ctx, span := tracing.Child(ctx, tracerScope, "outbox.enqueue")
	defer func() { tracing.End(span, err) }()
	payload, err := json.Marshal(ev.Payload)
	if err != nil {
		return uuid.Nil, fmt.Errorf("outbox: marshal payload: %w", err)
	}
	id, err = uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("outbox: new id: %w", err)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.destination.name", s.table),
			attribute.String("messaging.message.id", id.String()), attribute.String("handoff.event.type", ev.Type),
			attribute.String("handoff.idempotency_key", ev.IdempotencyKey))
	}
	stmts := pgdb.Prepared(db)
	_, err = stmts.Exec(ctx, s.sql.enqueue, id, ev.Type, string(payload), ev.IdempotencyKey,
		ev.Destination, ev.AggregateKey, ev.Sequence, ev.CorrelationID, tracing.Traceparent(ctx), s.channel)
	if err != nil {
		if pgdb.IsUniqueViolation(err) {
			return uuid.Nil, fmt.Errorf("%w: %s", ErrDuplicate, ev.IdempotencyKey)
		}
		return uuid.Nil, fmt.Errorf("outbox: insert and notify: %w", err)
	}
	return id, nil
}
