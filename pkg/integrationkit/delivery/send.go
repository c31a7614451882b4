package delivery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/tracing"
)

// Envelope is the JSON body of every delivery.
type Envelope struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	OccurredAt time.Time       `json:"occurred_at"`
	Sequence   int64           `json:"sequence"`
	Data       json.RawMessage `json:"data"`
}

// Request headers besides the Standard Webhooks ones.
const (
	HeaderIdempotencyKey = "X-Idempotency-Key"
	HeaderAttempt        = "X-Attempt"
	HeaderRequestID      = "X-Request-ID"
)

const snippetBytes = 1 << 10

type response struct {
	status   int
	header   http.Header
	snippet  string
	err      error
	started  time.Time
	duration time.Duration
}

// deliver sends one claimed event, if its circuit admits it (asked once for the
// events that share adm), and settles the outcome. ctx is cancelled only when a
// shutdown's grace runs out; the request is then abandoned and its lease released.
//
// Every step after the request gets its own bounded context, created when the answer
// (or the timeout) is in: an attempt is settled however long it took, so a timeout
// spends the budget and a slow 2xx is delivered once.
func (d *Dispatcher) deliver(ctx context.Context, rec outbox.Record, adm *admission) {
	ctx = logging.WithCorrelationID(ctx, rec.CorrelationID)
	ctx, span := d.startDeliver(ctx, rec)
	defer span.End()
	permit, ok := d.admitShared(ctx, rec, adm)
	if !ok {
		return
	}
	if permit.Probe {
		defer d.receivers.probe(rec.Destination)()
	}
	res := d.send(ctx, rec)
	settleCtx, cancel := settleContext(ctx)
	defer cancel()
	if ctx.Err() != nil && res.err != nil {
		d.release(settleCtx, []outbox.Record{rec})
		return
	}
	out, v := d.outcome(rec, answerOf(res), res, time.Now())
	recordOutcome(span, out)
	item := outbox.Settlement{Record: rec, Outcome: out}
	if d.settler == nil {
		if d.settle(settleCtx, []outbox.Settlement{item}) == 1 {
			d.recordCircuit(settleCtx, rec, permit, v)
		}
		return
	}
	var reset *breaker.Permit
	if d.breaker != nil && v == healthy && !permit.Probe {
		reset = &permit // a plain success: the settler resets the streak for the round
	}
	_, settleSpan := d.startSettle(settleCtx, 1)
	a := d.settler.settle(item, reset)
	tracing.End(settleSpan, a.err)
	if d.report(settleCtx, []outbox.Settlement{item}, map[uuid.UUID]bool{rec.ID: a.settled}, a.err) == 1 && !a.reset {
		d.recordCircuit(settleCtx, rec, permit, v)
	}
}

// settleTimeout bounds the database work that follows one request: settling it and
// telling the circuit.
const settleTimeout = 10 * time.Second

// settleContext is a fresh context for the database work after a request: it keeps
// ctx's values, outlives its cancellation (the answer is in and must be recorded),
// and is bounded by settleTimeout.
func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// settle records outcomes, then logs and reports each settled one; it returns how
// many were settled (the others' leases were taken over, or the database failed and
// their leases will expire).
func (d *Dispatcher) settle(ctx context.Context, items []outbox.Settlement) int {
	spanCtx, span := d.startSettle(ctx, len(items))
	settled, err := d.store.SettleMany(spanCtx, d.db, items)
	tracing.End(span, err)
	return d.report(ctx, items, settled, err)
}

// report logs and reports each of items that settled says was settled, after the
// statement that settled them (err: it failed); it returns how many were settled.
func (d *Dispatcher) report(ctx context.Context, items []outbox.Settlement, settled map[uuid.UUID]bool, err error) int {
	if err != nil {
		d.log.ErrorContext(ctx, "settle failed; the leases will expire and the events be retried", "events", len(items), "err", err)
		return 0
	}
	for _, it := range items {
		if !settled[it.Record.ID] {
			d.log.WarnContext(ctx, "outcome discarded: lease taken over", "event_id", it.Record.ID)
			continue
		}
		if it.Outcome.Sent {
			d.logOutcome(logging.WithCorrelationID(ctx, it.Record.CorrelationID), it.Record, it.Outcome)
		}
		d.observer.Settled(ctx, it.Record, it.Outcome)
	}
	n := 0
	for _, ok := range settled {
		if ok {
			n++
		}
	}
	return n
}

// release gives the records back without an attempt.
func (d *Dispatcher) release(ctx context.Context, recs []outbox.Record) {
	if err := d.store.Release(ctx, d.db, recs...); err != nil {
		d.log.WarnContext(ctx, "release failed; the leases will expire", "events", len(recs), "err", err)
	}
}

func (d *Dispatcher) send(ctx context.Context, rec outbox.Record) (res response) {
	ctx, span := d.startSend(ctx, rec.Destination)
	defer func() { endSend(span, res) }()
	body, err := json.Marshal(envelope(rec))
	if err != nil {
		return response{err: fmt.Errorf("marshal envelope: %w", err), started: time.Now()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.Destination, bytes.NewReader(body))
	if err != nil {
		return response{err: fmt.Errorf("build request: %w", err), started: time.Now()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "handoff-dispatcher/1")
	req.Header.Set(HeaderIdempotencyKey, rec.IdempotencyKey)
	req.Header.Set(HeaderAttempt, strconv.Itoa(rec.Requests+1))
	req.Header.Set(HeaderRequestID, cmp.Or(rec.CorrelationID, rec.ID.String()))
	propagate(ctx, req.Header, rec.Traceparent) // beside the signature: not signed
	started := time.Now()
	// The key is the webhook-id, so the signature covers it and a receiver can refuse
	// a captured delivery replayed under another key.
	if err := d.signer.SetHeaders(req.Header, rec.IdempotencyKey, started, body); err != nil {
		return response{err: fmt.Errorf("sign: %w", err), started: started}
	}

	resp, err := d.client.Do(req)
	if err != nil {
		return response{err: err, started: started, duration: time.Since(started)}
	}
	defer resp.Body.Close()
	// Read at most MaxResponseBytes (after any decompression), keep the first KiB; a
	// longer answer is no fault of the delivery.
	data, readErr := egress.ReadBody(resp.Body, d.cfg.MaxResponseBytes)
	res = response{status: resp.StatusCode, header: resp.Header, snippet: snippet(data),
		started: started, duration: time.Since(started)}
	if readErr != nil && !errors.Is(readErr, egress.ErrBodyTooLarge) && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// A 2xx whose body broke off still came from a receiver that committed.
		d.log.WarnContext(ctx, "response body cut short", "event_id", rec.ID, "err", readErr)
	}
	return res
}

// envelope is the body of rec's delivery: the same bytes on every attempt.
func envelope(rec outbox.Record) Envelope {
	return Envelope{ID: rec.ID.String(), Type: rec.EventType, OccurredAt: rec.CreatedAt.UTC(),
		Sequence: rec.Sequence, Data: rec.Payload}
}

// outcome is the event's next state after rec's request (or batch item) came to r at
// now, as the policy decides it, with what res recorded of the request; and what the
// request tells the circuit.
func (d *Dispatcher) outcome(rec outbox.Record, r result, res response, now time.Time) (outbox.Outcome, verdict) {
	rul := d.policy().decide(r, rec.Attempts, now)
	out := rul.outcome()
	out.Sent, out.StartedAt, out.Duration = true, res.started, res.duration
	out.StatusCode, out.Snippet = res.status, res.snippet
	if res.err != nil {
		out.ErrorClass = ErrorClass(res.err)
		out.Error = truncate(res.err.Error(), 500)
	} else if out.Status != outbox.StatusDelivered {
		out.Error = fmt.Sprintf("HTTP %d", res.status)
	}
	return out, rul.verdict
}

// policy is the outcome table with this dispatcher's budget and randomness.
func (d *Dispatcher) policy() policy {
	return policy{maxAttempts: d.cfg.MaxAttempts, jitter: d.jitter, spread: d.spread}
}

func (d *Dispatcher) logOutcome(ctx context.Context, rec outbox.Record, out outbox.Outcome) {
	attrs := []any{"event_id", rec.ID, "event_type", rec.EventType, "idempotency_key", rec.IdempotencyKey,
		"attempt", rec.Requests + 1, "status_code", out.StatusCode, "outcome", out.Label,
		"duration_ms", out.Duration.Milliseconds()}
	switch out.Status {
	case outbox.StatusDelivered:
		d.log.InfoContext(ctx, "event delivered", attrs...)
	case outbox.StatusFailed:
		d.log.ErrorContext(ctx, "event dead-lettered", append(attrs, "reason", out.FailedReason, "error", out.Error)...)
	default:
		d.log.WarnContext(ctx, "delivery failed, will retry", append(attrs, "retry_in", out.RetryIn, "error", out.Error)...)
	}
}

func snippet(b []byte) string {
	if len(b) > snippetBytes {
		b = b[:snippetBytes]
	}
	s := strings.ToValidUTF8(string(b), "")
	return strings.ReplaceAll(s, "\x00", "")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
