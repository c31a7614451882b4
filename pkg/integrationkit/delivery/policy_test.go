package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/webhook"
)

// The outcome table of docs/contract.md §4, one row per answer each of its lines names
// (a row's name starts with its line), then the budget, batch items (§6) and the
// circuit's deferrals. Every row states the whole ruling.
func TestPolicyFollowsTheOutcomeTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// jitter stands in for the full-jitter draw: n minutes after the n-th counted
	// failure, so a row shows which step of the schedule its delay comes from.
	pol := policy{
		maxAttempts: 8,
		jitter:      func(failure int) time.Duration { return time.Duration(failure) * time.Minute },
		spread:      func() time.Duration { return 250 * time.Millisecond },
	}
	answer := func(status int, retryAfter string) result {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return answerOf(response{status: status, header: h})
	}
	failed := func(err error) result { return answerOf(response{err: err}) }
	blocked := &egress.BlockedError{Addr: "169.254.169.254:80", Reason: "metadata"}
	badCert := &url.Error{Op: "Post", URL: "https://x", Err: &tls.CertificateVerificationError{Err: errors.New("unknown authority")}}
	delivered := ruling{status: outbox.StatusDelivered, counted: true, label: "delivered", verdict: healthy}
	deadLetter := func(reason string, v verdict) ruling {
		return ruling{status: outbox.StatusFailed, counted: true, label: reason, failedReason: reason,
			page: PageDeadLetter, verdict: v}
	}
	exhausted := func(v verdict) ruling {
		return ruling{status: outbox.StatusFailed, counted: true, label: "dead_letter",
			failedReason: "max_attempts_exhausted", page: PageDeadLetter, verdict: v}
	}
	retry := func(label string, in time.Duration, v verdict) ruling {
		return ruling{status: outbox.StatusPending, counted: true, retryIn: in, label: label, verdict: v}
	}
	rateLimited := func(in time.Duration) ruling {
		return ruling{status: outbox.StatusPending, retryIn: in, label: "rate_limited", verdict: neutral}
	}
	unauthorized := ruling{status: outbox.StatusPending, counted: true, retryIn: time.Minute, label: "unauthorized",
		page: PageUnauthorized, verdict: healthy}

	cases := []struct {
		name  string
		in    result
		spent int // counted attempts before this one
		want  ruling
	}{
		{"2xx: 200", answer(200, ""), 0, delivered},
		{"2xx: 201", answer(201, ""), 0, delivered},
		{"2xx: 204", answer(204, ""), 0, delivered},

		{"408", answer(408, ""), 0, retry("http_Request Timeout", time.Minute, failing)},
		{"408 after two counted failures", answer(408, ""), 2, retry("http_Request Timeout", 3*time.Minute, failing)},

		{"409", answer(409, ""), 0, retry("http_Conflict", time.Minute, healthy)},
		{"409: a Retry-After sets the next try", answer(409, "5"), 0, retry("http_Conflict", 5*time.Second, healthy)},

		{"425", answer(425, ""), 0, retry("http_Too Early", time.Minute, healthy)},
		{"425: a Retry-After is not read", answer(425, "5"), 0, retry("http_Too Early", time.Minute, healthy)},

		{"429 with a valid Retry-After: seconds", answer(429, "120"), 2, rateLimited(2 * time.Minute)},
		{"429 with a valid Retry-After: 0 is raised to 1 s", answer(429, "0"), 2, rateLimited(time.Second)},
		{"429 with a valid Retry-After: 3601 is lowered to 1 h", answer(429, "3601"), 2, rateLimited(time.Hour)},
		{"429 with a valid Retry-After: huge is 1 h", answer(429, "999999999"), 2, rateLimited(time.Hour)},
		{"429 with a valid Retry-After: past date is 1 s", answer(429, "Sun, 29 Nov 2026 11:00:00 GMT"), 2, rateLimited(time.Second)},
		{"429 with a valid Retry-After: future date", answer(429, "Sun, 29 Nov 2026 12:05:00 GMT"), 2, rateLimited(5 * time.Minute)},

		{"429 without one", answer(429, ""), 2, retry("http_Too Many Requests", 3*time.Minute, neutral)},
		{"429 with an invalid one: garbage", answer(429, "garbage"), 2, retry("http_Too Many Requests", 3*time.Minute, neutral)},
		{"429 with an invalid one: negative", answer(429, "-5"), 2, retry("http_Too Many Requests", 3*time.Minute, neutral)},
		{"429 with an invalid one: fraction", answer(429, "1.5"), 2, retry("http_Too Many Requests", 3*time.Minute, neutral)},

		{"5xx: 500", answer(500, ""), 0, retry("http_Internal Server Error", time.Minute, failing)},
		{"5xx: 502", answer(502, ""), 0, retry("http_Bad Gateway", time.Minute, failing)},
		{"5xx: 503", answer(503, ""), 0, retry("http_Service Unavailable", time.Minute, failing)},
		{"5xx: 504", answer(504, ""), 0, retry("http_Gateway Timeout", time.Minute, failing)},
		{"5xx: a Retry-After on 503 sets the next try", answer(503, "30"), 0, retry("http_Service Unavailable", 30*time.Second, failing)},
		{"5xx: a Retry-After on 500 is not read", answer(500, "30"), 0, retry("http_Internal Server Error", time.Minute, failing)},

		{"401", answer(401, ""), 0, unauthorized},
		{"403", answer(403, ""), 0, unauthorized},

		{"3xx: 301", answer(301, ""), 0, deadLetter("redirect_not_followed", healthy)},
		{"3xx: 302", answer(302, ""), 0, deadLetter("redirect_not_followed", healthy)},
		{"3xx: 307", answer(307, ""), 0, deadLetter("redirect_not_followed", healthy)},
		{"3xx: 308", answer(308, ""), 0, deadLetter("redirect_not_followed", healthy)},

		{"every other 4xx: 400", answer(400, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 404", answer(404, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 405", answer(405, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 410", answer(410, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 413", answer(413, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 415", answer(415, ""), 0, deadLetter("rejected_by_receiver", healthy)},
		{"every other 4xx: 422", answer(422, ""), 0, deadLetter("rejected_by_receiver", healthy)},

		{"transport error: deadline", failed(fmt.Errorf("post: %w", context.DeadlineExceeded)), 0, retry("timeout", time.Minute, failing)},
		{"transport error: dial timeout", failed(&net.OpError{Op: "dial", Err: context.DeadlineExceeded}), 0, retry("timeout", time.Minute, failing)},
		{"transport error: connection refused", failed(syscall.ECONNREFUSED), 0, retry("connection_refused", time.Minute, failing)},
		{"transport error: connection reset", failed(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), 0, retry("connection_reset", time.Minute, failing)},
		{"transport error: EOF", failed(&url.Error{Op: "Post", URL: "http://x", Err: io.EOF}), 0, retry("connection_reset", time.Minute, failing)},
		{"transport error: DNS name not found", failed(&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}), 0, retry("dns_error", time.Minute, failing)},
		{"transport error: other", failed(fmt.Errorf("post: %w", errors.New("broken pipe"))), 0, retry("connection_error", time.Minute, failing)},

		{"server certificate fails verification", failed(badCert), 0, deadLetter("tls_certificate", failing)},
		{"destination refused by the SSRF guard", failed(blocked), 0, deadLetter("blocked_destination", neutral)},
		{"key not usable as a webhook-id", failed(fmt.Errorf("sign: %w", webhook.ErrInvalidID)), 0, deadLetter("unsignable_id", neutral)},

		{"circuit open for the destination", result{held: &breaker.Permit{Wait: 30 * time.Second}}, 7,
			ruling{status: outbox.StatusPending, retryIn: 30*time.Second + 250*time.Millisecond,
				label: "circuit_open", deferredBy: outbox.DeferredByCircuit, verdict: neutral}},
		{"circuit open for the destination: probe in flight", result{held: &breaker.Permit{Wait: 10 * time.Second, ProbeInFlight: true}}, 0,
			ruling{status: outbox.StatusPending, retryIn: 10*time.Second + 250*time.Millisecond,
				label: "circuit_open", deferredBy: outbox.DeferredByCircuit, verdict: neutral}},
		{"circuit open for the destination: paused by an operator", result{held: &breaker.Permit{Wait: time.Minute, Paused: true}}, 0,
			ruling{status: outbox.StatusPending, retryIn: time.Minute + 250*time.Millisecond,
				label: "paused", deferredBy: outbox.DeferredByPause, verdict: neutral}},

		{"budget: the 7th counted failure is retried", answer(500, ""), 6, retry("http_Internal Server Error", 7*time.Minute, failing)},
		{"budget: the counted failure that exhausts it dead-letters", answer(500, ""), 7, exhausted(failing)},
		{"budget: exhausted whatever the Retry-After", answer(503, "30"), 7, exhausted(failing)},
		{"budget: exhausted by a timeout", failed(context.DeadlineExceeded), 7, exhausted(failing)},
		{"budget: exhausted by a 401 pages the dead letter", answer(401, ""), 7, exhausted(healthy)},
		{"budget: exhausted by a 429 without Retry-After", answer(429, ""), 7, exhausted(neutral)},
		{"budget: a 429 with Retry-After spends none of it", answer(429, "120"), 7, rateLimited(2 * time.Minute)},
		{"budget: spent, a 2xx is still delivered", answer(200, ""), 7, delivered},
		{"budget: spent, a 4xx is still rejected", answer(422, ""), 7, deadLetter("rejected_by_receiver", healthy)},

		{"batch item: 200", itemResult(&BatchAnswer{Status: 200}), 0,
			ruling{status: outbox.StatusDelivered, counted: true, label: "delivered", verdict: neutral}},
		{"batch item: 200 duplicate", itemResult(&BatchAnswer{Status: 200, Duplicate: true}), 0,
			ruling{status: outbox.StatusDelivered, counted: true, label: "delivered", verdict: neutral}},
		{"batch item: 409 with retry_after", itemResult(&BatchAnswer{Status: 409, RetryAfter: 5}), 0, retry("http_Conflict", 5*time.Second, neutral)},
		{"batch item: 429 with retry_after", itemResult(&BatchAnswer{Status: 429, RetryAfter: 120}), 0, rateLimited(2 * time.Minute)},
		{"batch item: 429 with a huge retry_after", itemResult(&BatchAnswer{Status: 429, RetryAfter: 999999}), 0, rateLimited(time.Hour)},
		{"batch item: 429 without retry_after", itemResult(&BatchAnswer{Status: 429}), 0, retry("http_Too Many Requests", time.Minute, neutral)},
		{"batch item: 500, the request tells the circuit", itemResult(&BatchAnswer{Status: 500}), 0, retry("http_Internal Server Error", time.Minute, neutral)},
		{"batch item: 401", itemResult(&BatchAnswer{Status: 401}), 0,
			ruling{status: outbox.StatusPending, counted: true, retryIn: time.Minute, label: "unauthorized", page: PageUnauthorized, verdict: neutral}},
		{"batch item: 422", itemResult(&BatchAnswer{Status: 422}), 0, deadLetter("rejected_by_receiver", neutral)},
		{"batch item: left unanswered", itemResult(nil), 2, retry("missing_item_answer", 3*time.Minute, neutral)},
		{"batch item: left unanswered, budget exhausted", itemResult(nil), 7, exhausted(neutral)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, pol.decide(c.in, c.spent, now))
		})
	}
}

// Classify, the kit's exported view of the table before the budget, reads the
// Retry-After header.
func TestClassifyReadsTheRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Now()
	h := http.Header{"Retry-After": {"120"}}
	require.Equal(t, Decision{Action: Retry, RetryAfter: 2 * time.Minute, Reason: "rate_limited"},
		Classify(http.StatusTooManyRequests, h, nil, now))
	require.Equal(t, Decision{Action: Retry, Counted: true, Reason: "http_Too Many Requests"},
		Classify(http.StatusTooManyRequests, nil, nil, now))
}
