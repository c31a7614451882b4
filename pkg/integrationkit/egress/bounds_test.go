package egress_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
)

// NewClient bounds every phase of a request: a server that never finishes the TLS
// handshake, never sends headers or trickles its body costs the caller the bound it
// set, not the server's patience.
func TestClientBoundsEveryPhase(t *testing.T) {
	t.Parallel()
	silent := func(conn net.Conn, done <-chan struct{}) { <-done }
	headersNever := func(conn net.Conn, done <-chan struct{}) {
		_, _ = http.ReadRequest(bufio.NewReader(conn))
		<-done
	}
	trickle := func(conn net.Conn, done <-chan struct{}) {
		_, _ = http.ReadRequest(bufio.NewReader(conn))
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
		}
	}
	cases := []struct {
		name   string
		scheme string
		serve  func(net.Conn, <-chan struct{})
		cfg    egress.ClientConfig
		want   string // in the error's text
	}{
		{"TLS handshake never ends", "https", silent,
			egress.ClientConfig{Timeout: time.Minute, TLSHandshakeTimeout: 200 * time.Millisecond}, "TLS handshake timeout"},
		{"headers never come", "http", headersNever,
			egress.ClientConfig{Timeout: time.Minute, ResponseHeaderTimeout: 200 * time.Millisecond}, "timeout awaiting response headers"},
		{"headers never come, total bound", "http", headersNever,
			egress.ClientConfig{Timeout: 200 * time.Millisecond, ResponseHeaderTimeout: time.Minute}, ""},
		{"body trickles", "http", trickle,
			egress.ClientConfig{Timeout: 300 * time.Millisecond}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := egresstest.Serve(t, "127.0.0.1:0", c.serve).Addr().String()
			client := egress.NewClient(egresstest.Guard(t, "127.0.0.1/32"), c.cfg)
			t.Cleanup(client.CloseIdleConnections)
			start := time.Now()
			resp, err := client.Get(c.scheme + "://" + addr + "/")
			if err == nil {
				_, err = egress.ReadBody(resp.Body, 1<<20)
				_ = resp.Body.Close()
			}
			require.ErrorContains(t, err, c.want) // "" when only the kind of error is sure
			var timeout net.Error
			require.ErrorAs(t, err, &timeout)
			require.True(t, timeout.Timeout(), "%v", err)
			require.Less(t, time.Since(start), 3*time.Second)
		})
	}
}

// A nil Dialer is the default policy: loopback is refused before any connection.
func TestNilDialerIsTheDefaultPolicy(t *testing.T) {
	t.Parallel()
	ln := egresstest.Listen(t, "127.0.0.1:0")
	client := egress.NewClient(nil, egress.ClientConfig{})
	t.Cleanup(client.CloseIdleConnections)
	_, err := client.Get("http://" + ln.Addr().String() + "/")
	egresstest.RequireBlocked(t, err, "loopback")
	require.Zero(t, ln.Accepted())
}

// WrapConn sees only connections that passed every check.
func TestWrapConnSeesOnlyCheckedConnections(t *testing.T) {
	t.Parallel()
	allowed, refused := egresstest.Listen(t, "127.0.0.1:0"), egresstest.Listen(t, "127.0.0.2:0")
	var wrapped atomic.Int64
	d := egress.New(egress.Config{Allow: allowlist(t, "127.0.0.1/32"), WrapConn: func(c net.Conn) net.Conn {
		wrapped.Add(1)
		return c
	}})
	_, err := d.DialContext(context.Background(), "tcp", refused.Addr().String())
	egresstest.RequireBlocked(t, err, "loopback")
	require.Zero(t, wrapped.Load())
	conn, err := d.DialContext(context.Background(), "tcp", allowed.Addr().String())
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.EqualValues(t, 1, wrapped.Load())
	require.Zero(t, refused.Accepted())
}

func TestReadBody(t *testing.T) {
	t.Parallel()
	broken := errors.New("connection reset")
	cases := []struct {
		name    string
		body    io.Reader
		limit   int64
		want    string
		tooBig  bool
		wantErr error
	}{
		{"shorter", strings.NewReader("abc"), 8, "abc", false, nil},
		{"exactly the limit", strings.NewReader("abcdefgh"), 8, "abcdefgh", false, nil},
		{"one byte over", strings.NewReader("abcdefghi"), 8, "abcdefgh", true, nil},
		{"endless", iotest.OneByteReader(zeros{}), 8, "\x00\x00\x00\x00\x00\x00\x00\x00", true, nil},
		{"zero limit, empty body", strings.NewReader(""), 0, "", false, nil},
		{"zero limit", strings.NewReader("a"), 0, "", true, nil},
		{"broken off", io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(broken)), 8, "ab", false, broken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := egress.ReadBody(c.body, c.limit)
			require.Equal(t, c.want, string(got))
			require.Equal(t, c.tooBig, errors.Is(err, egress.ErrBodyTooLarge), "%v", err)
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
			}
			if !c.tooBig && c.wantErr == nil {
				require.NoError(t, err)
			}
		})
	}
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
