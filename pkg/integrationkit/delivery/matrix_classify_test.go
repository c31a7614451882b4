package delivery_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
)

// Every answer the receiver can give maps to the decision of the outcome table.
func TestClassifyFollowsTheOutcomeTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	deliver := delivery.Decision{Action: delivery.Deliver, Reason: "delivered"}
	dead := func(reason string) delivery.Decision {
		return delivery.Decision{Action: delivery.DeadLetter, Reason: reason}
	}
	retry := func(status int, after time.Duration) delivery.Decision {
		return delivery.Decision{Action: delivery.Retry, Counted: true, RetryAfter: after, Reason: "http_" + http.StatusText(status)}
	}
	cases := []struct {
		status     int
		retryAfter string
		want       delivery.Decision
	}{
		{200, "", deliver},
		{201, "", deliver},
		{204, "", deliver},
		{301, "", dead("redirect_not_followed")},
		{302, "", dead("redirect_not_followed")},
		{307, "", dead("redirect_not_followed")},
		{308, "", dead("redirect_not_followed")},
		{400, "", dead("rejected_by_receiver")},
		{404, "", dead("rejected_by_receiver")},
		{405, "", dead("rejected_by_receiver")},
		{410, "", dead("rejected_by_receiver")},
		{413, "", dead("rejected_by_receiver")},
		{415, "", dead("rejected_by_receiver")},
		{422, "", dead("rejected_by_receiver")},
		{401, "", delivery.Decision{Action: delivery.Retry, Counted: true, Page: true, Reason: "unauthorized"}},
		{403, "", delivery.Decision{Action: delivery.Retry, Counted: true, Page: true, Reason: "unauthorized"}},
		{408, "", retry(408, 0)},
		{409, "", retry(409, 0)},
		{409, "5", retry(409, 5*time.Second)},
		{425, "", retry(425, 0)},
		{429, "120", delivery.Decision{Action: delivery.Retry, RetryAfter: 2 * time.Minute, Reason: "rate_limited"}},
		{429, "0", delivery.Decision{Action: delivery.Retry, RetryAfter: time.Second, Reason: "rate_limited"}},
		{429, "999999999", delivery.Decision{Action: delivery.Retry, RetryAfter: time.Hour, Reason: "rate_limited"}},
		{429, "Sun, 29 Nov 2026 11:00:00 GMT", delivery.Decision{Action: delivery.Retry, RetryAfter: time.Second, Reason: "rate_limited"}},
		{429, "Sun, 29 Nov 2026 12:05:00 GMT", delivery.Decision{Action: delivery.Retry, RetryAfter: 5 * time.Minute, Reason: "rate_limited"}},
		{429, "garbage", retry(429, 0)},
		{429, "-5", retry(429, 0)},
		{429, "1.5", retry(429, 0)},
		{429, "", retry(429, 0)},
		{500, "", retry(500, 0)},
		{502, "", retry(502, 0)},
		{503, "", retry(503, 0)},
		{503, "30", retry(503, 30*time.Second)},
		{504, "", retry(504, 0)},
		{500, "30", retry(500, 0)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d %s", c.status, c.retryAfter), func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if c.retryAfter != "" {
				h.Set("Retry-After", c.retryAfter)
			}
			require.Equal(t, c.want, delivery.Classify(c.status, h, nil, now))
		})
	}
}

// Transport errors, most of them produced for real on loopback: a refused destination
// and an invalid server certificate are dead-lettered at once and paged; everything
// else is retried and counted under its error class.
func TestClassifyTransportErrors(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(tlsSrv.Close)
	trusted := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	port := strconv.Itoa(tlsSrv.Listener.Addr().(*net.TCPAddr).Port)
	closed := closedPort(t)

	cases := []struct {
		name  string
		err   func(t *testing.T) error
		class string
	}{
		{"unknown certificate authority", func(t *testing.T) error {
			return post(t, &http.Transport{}, "https://127.0.0.1:"+port)
		}, "tls_certificate"},
		{"host name mismatch", func(t *testing.T) error {
			return post(t, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trusted}}, "https://localhost:"+port)
		}, "tls_certificate"},
		{"blocked destination", func(t *testing.T) error {
			return post(t, &http.Transport{DialContext: egress.New(egress.Config{}).DialContext}, "http://169.254.169.254/")
		}, "blocked_destination"},
		{"connection refused", func(t *testing.T) error {
			return post(t, &http.Transport{}, "http://"+closed)
		}, "connection_refused"},
		{"name not found", func(*testing.T) error {
			return &url.Error{Op: "Post", URL: "http://nowhere.invalid", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}
		}, "dns_error"},
		{"lookup timed out", func(*testing.T) error {
			return &url.Error{Op: "Post", URL: "http://slow.example", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}}}
		}, "dns_error"},
		{"deadline", func(*testing.T) error { return fmt.Errorf("post: %w", context.DeadlineExceeded) }, "timeout"},
		{"reset", func(*testing.T) error { return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET} }, "connection_reset"},
		{"EOF", func(*testing.T) error { return &url.Error{Op: "Post", URL: "http://x", Err: io.EOF} }, "connection_reset"},
		{"unexpected EOF", func(*testing.T) error { return io.ErrUnexpectedEOF }, "connection_reset"},
		{"other", func(*testing.T) error { return errors.New("something else") }, "connection_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.err(t)
			require.Error(t, err)
			require.Equal(t, c.class, delivery.ErrorClass(err), err.Error())
			want := delivery.Decision{Action: delivery.Retry, Counted: true, Reason: c.class}
			if c.class == "tls_certificate" || c.class == "blocked_destination" {
				want = delivery.Decision{Action: delivery.DeadLetter, Page: true, Reason: c.class}
			}
			require.Equal(t, want, delivery.Classify(0, nil, err, time.Now()))
		})
	}
}

// post sends an empty POST to rawURL through tr and returns the client's error.
func post(t *testing.T, tr *http.Transport, rawURL string) error {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Post(rawURL, "application/json", nil)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return err
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
