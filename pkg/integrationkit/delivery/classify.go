package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/webhook"
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
	if err != nil {
		return classifyError(err)
	}
	ra, hasRA := time.Duration(0), false
	if status == http.StatusConflict || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		ra, hasRA = backoff.ParseRetryAfter(h.Get("Retry-After"), now)
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
