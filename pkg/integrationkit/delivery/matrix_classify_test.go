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

	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
)

// Transport errors, most of them produced for real on loopback, are named by their
// class and decided as policy_test.go's row for that class says: a refused destination
// and an invalid server certificate are dead-lettered at once and paged; everything
// else is retried and counted.
func TestClassifyTransportErrors(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(tlsSrv.Close)
	trusted := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	port := strconv.Itoa(tlsSrv.Listener.Addr().(*net.TCPAddr).Port)
	closed := commandtest.FreeAddr(t)

	retried := func(class string) delivery.Decision {
		return delivery.Decision{Action: delivery.Retry, Counted: true, Reason: class}
	}
	deadLettered := func(class string) delivery.Decision {
		return delivery.Decision{Action: delivery.DeadLetter, Page: true, Reason: class}
	}
	cases := []struct {
		name string
		err  func(t *testing.T) error
		want delivery.Decision // its Reason is the error's class
	}{
		{"unknown certificate authority", func(t *testing.T) error {
			return post(t, &http.Transport{}, "https://127.0.0.1:"+port)
		}, deadLettered("tls_certificate")},
		{"host name mismatch", func(t *testing.T) error {
			return post(t, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trusted}}, "https://localhost:"+port)
		}, deadLettered("tls_certificate")},
		{"blocked destination", func(t *testing.T) error {
			return post(t, &http.Transport{DialContext: egress.New(egress.Config{}).DialContext}, "http://169.254.169.254/")
		}, deadLettered("blocked_destination")},
		{"connection refused", func(t *testing.T) error {
			return post(t, &http.Transport{}, "http://"+closed)
		}, retried("connection_refused")},
		{"name not found", func(*testing.T) error {
			return &url.Error{Op: "Post", URL: "http://nowhere.invalid", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}
		}, retried("dns_error")},
		{"lookup timed out", func(*testing.T) error {
			return &url.Error{Op: "Post", URL: "http://slow.example", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}}}
		}, retried("dns_error")},
		{"deadline", func(*testing.T) error { return fmt.Errorf("post: %w", context.DeadlineExceeded) }, retried("timeout")},
		{"reset", func(*testing.T) error { return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET} }, retried("connection_reset")},
		{"EOF", func(*testing.T) error { return &url.Error{Op: "Post", URL: "http://x", Err: io.EOF} }, retried("connection_reset")},
		{"unexpected EOF", func(*testing.T) error { return io.ErrUnexpectedEOF }, retried("connection_reset")},
		{"other", func(*testing.T) error { return errors.New("something else") }, retried("connection_error")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.err(t)
			require.Error(t, err)
			require.Equal(t, c.want.Reason, delivery.ErrorClass(err), err.Error())
			require.Equal(t, c.want, delivery.Classify(0, nil, err, time.Now()))
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
