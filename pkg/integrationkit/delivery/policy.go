package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/webhook"
)

// This file is the dispatcher's retry policy: the outcome table of docs/contract.md §4
// and nothing else. Every request, every item of a batch answer and every deferral by
// the circuit is decided here; the callers only send, settle and tell the circuit.

// result is what came of one event's turn: the receiver's answer (a status and its
// Retry-After), a transport error, an item a batch answer left out, or no request at
// all because the circuit held it.
type result struct {
	status     int
	retryAfter string // the Retry-After header, or a batch item's retry_after
	err        error  // the transport error; status is then 0
	// item marks one item of a batch answer: the batch request as a whole, not each
	// item, tells the circuit.
	item bool
	// unanswered marks a batch item the receiver's answer left out.
	unanswered bool
	// held, when set, is the circuit's refusal: nothing was sent.
	held *breaker.Permit
}

// answerOf is the result of one request the dispatcher sent.
func answerOf(res response) result {
	return result{status: res.status, retryAfter: res.header.Get("Retry-After"), err: res.err}
}

// itemResult is the result of one item of a batch answer (nil: left out). A positive
// retry_after stands in for the Retry-After header; zero means there is none.
func itemResult(a *BatchAnswer) result {
	if a == nil {
		return result{item: true, unanswered: true}
	}
	r := result{status: a.Status, item: true}
	if a.RetryAfter > 0 {
		r.retryAfter = strconv.Itoa(a.RetryAfter)
	}
	return r
}

// policy is the budget and the randomness the outcome table is applied with.
type policy struct {
	// maxAttempts is the budget of counted attempts (Config.MaxAttempts).
	maxAttempts int
	// jitter is the backoff delay after the failure-th counted failure.
	jitter func(failure int) time.Duration
	// spread is a small delay added to a deferral, so deferred events do not all come
	// due at once.
	spread func() time.Duration
}

// ruling is the policy's whole decision about one result.
type ruling struct {
	// status is the event's next state: outbox.StatusDelivered, StatusPending or
	// StatusFailed.
	status string
	// counted spends one attempt: every request does but the retries the table does
	// not count (a 429 with a valid Retry-After); a deferral never does.
	counted bool
	// retryIn is a pending event's delay: the receiver's Retry-After, the backoff
	// jitter, or the circuit's wait.
	retryIn      time.Duration
	label        string // names the outcome in the attempt log
	failedReason string // why a dead letter failed
	page         string // the page owed to on-call, if any
	deferredBy   string // what held back a deferral
	verdict      verdict
}

// outcome is the part of the event's outbox.Outcome the policy decides.
func (r ruling) outcome() outbox.Outcome {
	return outbox.Outcome{Status: r.status, Counted: r.counted, RetryIn: r.retryIn, Label: r.label,
		FailedReason: r.failedReason, Page: r.page, DeferredBy: r.deferredBy}
}

// decide applies the outcome table to r, for an event that had spent attempts of its
// budget before this turn. now reads a Retry-After given as an HTTP date.
func (p policy) decide(r result, spent int, now time.Time) ruling {
	if r.held != nil {
		out := ruling{status: outbox.StatusPending, retryIn: r.held.Wait + p.spread(),
			deferredBy: outbox.DeferredByCircuit, label: "circuit_open"}
		if r.held.Paused {
			out.deferredBy, out.label = outbox.DeferredByPause, "paused"
		}
		return out
	}
	dec := classify(r, now)
	out := ruling{label: dec.Reason, counted: dec.Action != Retry || dec.Counted, verdict: verdictOf(r)}
	attempts := spent
	if out.counted {
		attempts++
	}
	switch {
	case dec.Action == Deliver:
		out.status = outbox.StatusDelivered
	case dec.Action == DeadLetter:
		out.status, out.failedReason = outbox.StatusFailed, dec.Reason
	case attempts >= p.maxAttempts && dec.Counted:
		out.status, out.failedReason, out.label = outbox.StatusFailed, reasonExhausted, "dead_letter"
	case dec.RetryAfter > 0:
		out.status, out.retryIn = outbox.StatusPending, dec.RetryAfter
	default:
		out.status, out.retryIn = outbox.StatusPending, p.jitter(attempts)
	}
	switch {
	case out.status == outbox.StatusFailed:
		out.page = PageDeadLetter
	case dec.Page:
		out.page = PageUnauthorized
	}
	return out
}

// reasonExhausted is the failed_reason of an event whose counted attempts ran out.
const reasonExhausted = "max_attempts_exhausted"

// The pages an outcome owes on-call (outbox.Outcome.Page), settled with it.
const (
	// PageDeadLetter: the event was dead-lettered.
	PageDeadLetter = "dead_letter"
	// PageUnauthorized: the receiver refused the request with 401 or 403, a secret or
	// clock problem on-call can fix.
	PageUnauthorized = "unauthorized"
)

// Action is what the dispatcher does with an event after one answer.
type Action int

// The actions of the outcome table (docs/contract.md).
const (
	// Deliver marks the event delivered.
	Deliver Action = iota + 1
	// Retry schedules another attempt; Counted says whether it spends the budget.
	Retry
	// DeadLetter fails the event at once; it is never retried by itself.
	DeadLetter
)

// Decision classifies one answer (or transport error) of the receiver.
type Decision struct {
	Action Action
	// Counted spends one attempt of the budget.
	Counted bool
	// RetryAfter, when positive, replaces the backoff schedule for the next try.
	RetryAfter time.Duration
	// Page asks for on-call to be paged at once (a secret or clock problem).
	Page bool
	// Reason names the outcome in the attempt log and in dead letters.
	Reason string
}

// Classify maps an HTTP status (or the transport error) to a decision, following the
// outcome table: 2xx delivered; 408, 409, 425, 5xx, timeouts and connection errors
// retried and counted; 429 with Retry-After retried at that time without spending the
// budget (without it, like a 5xx); 401/403 retried, counted and paged; 3xx and every
// other 4xx dead-lettered at once; a refused destination or an invalid server
// certificate dead-lettered at once and paged. A Retry-After on 409, 429 or 503 sets
// the next try, bounded to [1 s, 1 h].
func Classify(status int, h http.Header, err error, now time.Time) Decision {
	return classify(result{status: status, retryAfter: h.Get("Retry-After"), err: err}, now)
}

// classify is the table's verdict on r before the budget is looked at.
func classify(r result, now time.Time) Decision {
	if r.unanswered {
		return Decision{Action: Retry, Counted: true, Reason: "missing_item_answer"}
	}
	if r.err != nil {
		return classifyError(r.err)
	}
	status := r.status
	ra, hasRA := time.Duration(0), false
	if status == http.StatusConflict || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		ra, hasRA = backoff.ParseRetryAfter(r.retryAfter, now)
	}
	switch {
	case status >= 200 && status < 300:
		return Decision{Action: Deliver, Reason: "delivered"}
	case status == http.StatusTooManyRequests && hasRA:
		return Decision{Action: Retry, RetryAfter: ra, Reason: "rate_limited"}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Decision{Action: Retry, Counted: true, Page: true, Reason: "unauthorized"}
	case status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooEarly || status == http.StatusTooManyRequests || status >= 500:
		return Decision{Action: Retry, Counted: true, RetryAfter: ra, Reason: "http_" + http.StatusText(status)}
	case status >= 300 && status < 400:
		return Decision{Action: DeadLetter, Reason: "redirect_not_followed"}
	default:
		return Decision{Action: DeadLetter, Reason: "rejected_by_receiver"}
	}
}

// BlockedError is the egress guard's refusal of a destination; the event is
// dead-lettered with reason blocked_destination and never retried.
type BlockedError = egress.BlockedError

// classifyError decides on a transport error. Two are configuration errors that no
// retry can cure, so they are dead-lettered at once and paged: a destination the
// egress guard refuses, and a server certificate that fails verification (unknown
// authority, wrong host name, expired). Every other error is retried and counted.
func classifyError(err error) Decision {
	switch class := ErrorClass(err); class {
	case "blocked_destination", "tls_certificate", "unsignable_id":
		return Decision{Action: DeadLetter, Page: true, Reason: class}
	default:
		return Decision{Action: Retry, Counted: true, Reason: class}
	}
}

// ErrorClass names a transport error for the attempt log: blocked_destination,
// unsignable_id (the event's key cannot be a webhook-id: nothing was sent),
// tls_certificate, dns_error (the lookup failed or timed out), timeout,
// connection_refused, connection_reset or connection_error.
func ErrorClass(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var blocked *BlockedError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &blocked):
		return "blocked_destination"
	case errors.Is(err, webhook.ErrInvalidID):
		return "unsignable_id"
	case errors.As(err, &certErr):
		return "tls_certificate"
	case errors.As(err, &dnsErr):
		return "dns_error"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_reset"
	default:
		return "connection_error"
	}
}

// verdict is what one request tells the circuit.
type verdict int

const (
	neutral verdict = iota // no answer about the receiver's health: a 429, a refused dial
	healthy                // the receiver answered and is up
	failing                // a receiver fault: 5xx, 408, a timeout or a connection error
)

// verdictOf says what a result tells the circuit. Only faults of the receiver or the
// path to it count toward opening it: 5xx, 408, timeouts and connection errors. Every
// other answer (409, 425, 401, 403, other 4xx, 3xx) comes from a receiver that is up
// and resets the streak; a 429 asks for patience and neither counts nor resets, nor
// does a request that never left (a destination the egress guard refused, an event
// that could not be signed). A batch request counts once, by its own answer, so its
// items tell the circuit nothing.
func verdictOf(r result) verdict {
	switch {
	case r.item:
		return neutral
	case r.err != nil && !reachedReceiver(r.err):
		return neutral
	case r.err != nil:
		return failing
	case r.status == http.StatusTooManyRequests:
		return neutral
	case r.status >= 500 || r.status == http.StatusRequestTimeout:
		return failing
	default:
		return healthy
	}
}

// reachedReceiver reports whether a transport error came from trying the receiver,
// rather than from refusing to send at all.
func reachedReceiver(err error) bool {
	var blocked *BlockedError
	return !errors.As(err, &blocked) && !errors.Is(err, webhook.ErrInvalidID)
}
