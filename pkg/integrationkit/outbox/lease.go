package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"handoff/pkg/integrationkit/pgdb"
)

// Record is a claimed event, leased to one dispatcher until LeaseToken is superseded.
type Record struct {
	ID             uuid.UUID
	EventType      string
	Payload        json.RawMessage
	IdempotencyKey string
	Destination    string
	AggregateKey   string
	Sequence       int64
	CorrelationID  string
	CreatedAt      time.Time
	// Attempts is how many attempts were counted against the budget before this claim.
	Attempts int
	// Requests is how many requests were sent before this claim; the next is Requests+1.
	Requests   int
	LeaseToken uuid.UUID
	// Traceparent is the W3C trace context the event was written under (its
	// outbox.enqueue span), or "" when it was written untraced.
	Traceparent string
}

// ErrLeaseLost means the record's lease was taken over (it expired and another
// dispatcher claimed the row): this dispatcher's outcome is discarded, so a late
// worker can never overwrite a newer result.
var ErrLeaseLost = errors.New("outbox: lease lost to another dispatcher")

// Claim leases up to limit due events to owner for lease, in one statement (sent
// beside a setting, in one round trip). An event is due when it is pending, its next
// attempt time has come, nobody holds a live lease on it, and every earlier event of
// its aggregate is delivered or skipped (neither pending nor failed): so an
// aggregate's events go one at a time, in sequence, a failed head holds back only its
// own aggregate, and a head an operator skipped holds back nothing. Times come from
// the database's clock.
//
// The statement's plan must not follow the statistics, which are usually taken while
// nothing is pending (an idle queue, the usual state) and then say a burst of 10,000
// events is one row. Two things keep it to walking the due index in order and
// stopping once the batch is full:
//   - OFFSET 0 keeps the head test a correlated subplan, one index probe per
//     candidate. Without it PostgreSQL turns NOT EXISTS into an anti-join that scanned
//     every undelivered row once per candidate, seconds per claim; a plain scalar
//     subquery instead gets a selectivity guess that sorts the whole backlog.
//   - The claim runs with enable_sort off (claimUnsorted). For "one row" any index of
//     pending rows looks as cheap as the due index, and PostgreSQL took the one by
//     creation time and sorted what it read: the whole backlog at each claim (20,000
//     buffers for a claim of about 20, in a 20,000-event burst after an outage had
//     bloated the due index). With sorts off the due index's order is the only cheap
//     one.
func (s *Store) Claim(ctx context.Context, db bun.IDB, owner string, limit int, lease time.Duration) ([]Record, error) {
	return s.ClaimExcept(ctx, db, owner, limit, lease, nil)
}

// ClaimExcept is Claim leaving the events of the except destinations in the queue:
// a dispatcher's way of not claiming what it knows it cannot send now (a destination
// whose circuit is being probed). Such a claim reads past the events it leaves, so it
// is for the short while a probe is out, not a standing filter.
func (s *Store) ClaimExcept(ctx context.Context, db bun.IDB, owner string, limit int, lease time.Duration, except []string) ([]Record, error) {
	query, args := s.sql.claim, []any{limit, owner, lease.Seconds()}
	if len(except) > 0 {
		query, args = s.sql.claimExcept, append(args, except)
	}
	recs, err := claimUnsorted(ctx, db, query, args)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	return recs, nil
}

// sortsOff turns sorts off for the claim alone.
var sortsOff = pgdb.NewLocal("enable_sort", "off")

// claimUnsorted runs the claim query with enable_sort off (pgdb.Local: after the
// first claim on a connection, which prepares it, the setting and the claim go in one
// round trip).
func claimUnsorted(ctx context.Context, db bun.IDB, query string, args []any) (recs []Record, err error) {
	err = sortsOff.Query(ctx, db, query, args, func(rows pgdb.Rows) (err error) {
		recs, err = scanRecords(rows)
		return err
	})
	return recs, err
}

// scanRecords reads the claimed rows; the caller closes them.
func scanRecords(rows pgdb.Rows) ([]Record, error) {
	var recs []Record
	for rows.Next() {
		var r Record
		var payload []byte
		if err := rows.Scan(&r.ID, &r.EventType, &payload, &r.IdempotencyKey, &r.Destination,
			&r.AggregateKey, &r.Sequence, &r.CorrelationID, &r.CreatedAt, &r.Attempts, &r.Requests,
			&r.LeaseToken, &r.Traceparent); err != nil {
			return nil, err
		}
		r.Payload = payload
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// Outcome is how one delivery attempt ended and what happens to the event next.
type Outcome struct {
	// Status is the event's new delivery_status.
	Status string
	// Counted spends one attempt of the budget.
	Counted bool
	// RetryIn is the delay, from the database's now(), before the next attempt of a
	// pending event.
	RetryIn time.Duration
	// FailedReason is kept on a dead-lettered event.
	FailedReason string
	// Sent reports that a request went out (an attempt row is written). A deferral
	// without a request writes no attempt row.
	Sent bool
	// DeferredBy, on a deferral without a request, names what deferred the event
	// (DeferredByCircuit, DeferredByPause): deferred_at and deferred_by record it, and
	// Hasten looks for it when that is over. last_error keeps the answer of the last
	// real request. Any other outcome clears the deferral.
	DeferredBy string
	StartedAt  time.Time
	Duration   time.Duration
	StatusCode int
	ErrorClass string
	Error      string
	// Snippet is the start of the response body, at most 1 KiB.
	Snippet string
	// Label names the outcome in the attempt log (delivered, retry, dead_letter, …).
	Label string
	// Page, when set, names the page on-call is owed for this outcome (e.g.
	// "dead_letter"). It is written with the outcome and stays owed in the row, beside
	// any other page still owed, until a pager takes it (TakeOwedPages), so no crash
	// between the two can lose it.
	Page string
}

// Settle records an attempt and the event's new state, fenced by the lease token: if
// another dispatcher took the row over, nothing is written and ErrLeaseLost is returned.
func (s *Store) Settle(ctx context.Context, db bun.IDB, rec Record, out Outcome) error {
	settled, err := s.SettleMany(ctx, db, []Settlement{{Record: rec, Outcome: out}})
	if err != nil {
		return err
	}
	if len(settled) == 0 {
		return fmt.Errorf("%w: %s", ErrLeaseLost, rec.ID)
	}
	return nil
}

// Settlement pairs a claimed record with its outcome.
type Settlement struct {
	Record  Record
	Outcome Outcome
}

// SettleMany records the attempts and new states of many events in one statement, each
// fenced by its own lease token, and returns the ids it settled: an event missing from
// the result was taken over by another dispatcher and keeps the newer outcome. The
// items must be of distinct events: for two outcomes of one event the result could not
// say which was settled.
func (s *Store) SettleMany(ctx context.Context, db bun.IDB, items []Settlement) (map[uuid.UUID]bool, error) {
	if len(items) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	settled := map[uuid.UUID]bool{}
	err := settlePlan.Query(ctx, db, s.sql.settle, newColumns(items).args(), func(rows pgdb.Rows) error {
		clear(settled)
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				return err
			}
			settled[id] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: settle %d events: %w", len(items), err)
	}
	return settled, nil
}

// settlePlan gives the settlement one plan per connection, made at its first
// execution and reused whatever the number of events, that reaches the outbox by its
// primary key only and joins the values to its rows with a hash (under the simple
// protocol nothing is prepared, and each settlement is planned for its values):
//   - Planned anew at each execution (PostgreSQL's choice for a statement whose arrays
//     it counts), the settlement cost more to plan than to run: 0.2-0.4 ms for one
//     event against 0.05-0.1, and 15 ms of a 400-event settlement's 35.
//   - One plan must not follow the statistics it was made with: made while the outbox
//     was nearly empty, it would read the table whole (a sequential scan, or every
//     entry of an index) at every settlement until an ANALYZE. With sequential scans
//     off, the statement's condition on its ids ($1) is the only way to the table,
//     and with nested loops and merge joins off the join is a hash, linear in the
//     number of events (a nested loop made for the generic estimate of ten rows
//     compared each updated row with each value: 160,000 comparisons for 400).
var settlePlan = pgdb.NewLocal("plan_cache_mode", "force_generic_plan", "enable_seqscan", "off",
	"enable_nestloop", "off", "enable_mergejoin", "off")

// columns is a batch of settlements turned into one array per column.
type columns struct {
	ids, tokens, status, errs, failedReason, errClass, snippet, label, page, deferredBy []string
	counted, sent, code, durationMS                                                     []int64
	retrySecs, started                                                                  []float64
}

func newColumns(items []Settlement) columns {
	var c columns
	for _, it := range items {
		o := it.Outcome
		c.ids = append(c.ids, it.Record.ID.String())
		c.tokens = append(c.tokens, it.Record.LeaseToken.String())
		c.status = append(c.status, o.Status)
		c.counted = append(c.counted, b2i(o.Counted))
		c.sent = append(c.sent, b2i(o.Sent))
		c.deferredBy = append(c.deferredBy, o.DeferredBy)
		c.retrySecs = append(c.retrySecs, o.RetryIn.Seconds())
		c.code = append(c.code, int64(o.StatusCode))
		c.errs = append(c.errs, o.Error)
		c.failedReason = append(c.failedReason, o.FailedReason)
		c.errClass = append(c.errClass, o.ErrorClass)
		c.started = append(c.started, float64(o.StartedAt.UnixMicro())/1e6)
		c.durationMS = append(c.durationMS, o.Duration.Milliseconds())
		c.snippet = append(c.snippet, o.Snippet)
		c.label = append(c.label, o.Label)
		c.page = append(c.page, o.Page)
	}
	return c
}

// args is the settlement statement's parameters.
func (c columns) args() []any {
	return []any{c.ids, c.tokens, c.status, c.counted, c.sent, c.retrySecs, c.code, c.errs,
		c.failedReason, c.errClass, c.started, c.durationMS, c.snippet, c.label, c.page, c.deferredBy}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Release gives up the leases of recs without an attempt (a dispatcher shutting
// down, or one that will not send them under this lease), in one statement, so the
// events are claimable again at once. A lease already taken over is left alone.
func (s *Store) Release(ctx context.Context, db bun.IDB, recs ...Record) error {
	if len(recs) == 0 {
		return nil
	}
	ids, tokens := make([]string, len(recs)), make([]string, len(recs))
	for i, rec := range recs {
		ids[i], tokens[i] = rec.ID.String(), rec.LeaseToken.String()
	}
	_, err := db.NewRaw(`UPDATE ? AS o SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
		FROM unnest(?::uuid[], ?::uuid[]) AS r(id, token)
		WHERE o.id = r.id AND o.lease_token = r.token`,
		bun.Ident(s.table), pgdialect.Array(ids), pgdialect.Array(tokens)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("outbox: release %d events: %w", len(recs), err)
	}
	return nil
}

// What deferred an event without a request (Outcome.DeferredBy, kept in deferred_by
// with deferred_at); Hasten makes such events due again when it is over.
const (
	// DeferredByCircuit: its destination's circuit is open.
	DeferredByCircuit = "circuit_open"
	// DeferredByPause: an operator paused its destination.
	DeferredByPause = "paused"
)

// Hasten makes every pending event to destination that was deferred by deferredBy
// (DeferredByCircuit or DeferredByPause) due now, in db's transaction, and returns how
// many. Events waiting out a backoff stay as they are.
func (s *Store) Hasten(ctx context.Context, db bun.IDB, destination, deferredBy string) (int64, error) {
	res, err := db.NewRaw(`UPDATE ? SET next_attempt_at = now()
		WHERE delivery_status = 'pending' AND next_attempt_at > now() AND destination = ?
		  AND deferred_by = ?`,
		bun.Ident(s.table), destination, deferredBy).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: hasten: %w", err)
	}
	return res.RowsAffected()
}

// NextDue returns how long until the earliest scheduled retry (the earliest pending
// next_attempt_at still in the future), and false when none is scheduled. Events that
// are due already but not claimable wait on something that wakes the dispatcher by
// itself: a predecessor in flight, or a lease that the cron tick finds expired.
func (s *Store) NextDue(ctx context.Context, db bun.IDB) (time.Duration, bool, error) {
	var secs *float64
	err := pgdb.Prepared(db).QueryRow(ctx, s.sql.nextDue, nil, &secs)
	if err != nil {
		return 0, false, fmt.Errorf("outbox: next due: %w", err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}
