// Package egresstest holds what the tests of the SSRF guard and of its users check it
// with: a listener that counts the connections it gets (the address a guarded client
// must never reach, or the one it must), a guard and an assertion on its refusals, and
// a check that a client ignores the environment's proxy. It is for tests only:
// a service's non-test code does not import it.
package egresstest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/egress"
)

// Listener counts the connections it accepts on one address until the test ends: a
// trap nothing may reach, the address a dial must reach, or a scripted server.
type Listener struct {
	net.Listener
	accepted atomic.Int64
}

// Listen listens on addr (such as "127.0.0.2:0") until the test ends, and counts and
// closes every connection it accepts.
func Listen(t testing.TB, addr string) *Listener {
	t.Helper()
	return Serve(t, addr, func(net.Conn, <-chan struct{}) {})
}

// Serve listens on addr until the test ends and runs serve on every connection it
// accepts, each in a goroutine of its own, then closes the connection. done is closed
// when the test ends: serve returns then, or when its writes fail; the test's cleanup
// waits for it.
func Serve(t testing.TB, addr string, serve func(conn net.Conn, done <-chan struct{})) *Listener {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	require.NoError(t, err)
	l := &Listener{Listener: ln}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			wg.Go(func() {
				defer conn.Close()
				serve(conn, done)
			})
		}
	})
	t.Cleanup(func() { close(done); _ = ln.Close(); wg.Wait() })
	return l
}

// Accepted is the number of connections accepted so far.
func (l *Listener) Accepted() int64 { return l.accepted.Load() }

// Port is the port the listener is on, for another listener or a URL on it.
func (l *Listener) Port() string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }

// URL is the base URL of the listener: "http://" and its address.
func (l *Listener) URL() string { return "http://" + l.Addr().String() }

// Guard is the SSRF guard of the allowlist allow (such as "127.0.0.1/32").
func Guard(t testing.TB, allow string) *egress.Dialer {
	t.Helper()
	a, err := egress.ParseAllowlist(allow)
	require.NoError(t, err)
	return egress.New(egress.Config{Allow: a})
}

// RequireBlocked asserts that err is, or wraps, the guard's refusal for reason (such
// as "loopback").
func RequireBlocked(t testing.TB, err error, reason string) {
	t.Helper()
	var blocked *egress.BlockedError
	require.ErrorAs(t, err, &blocked)
	require.Equal(t, reason, blocked.Reason, blocked.Error())
}

// childPort carries the receiver's port to the child process of RequireProxyIgnored.
const childPort = "EGRESSTEST_PROXY_CHILD_PORT"

// RequireProxyIgnored checks that a client connects to its destination itself, never
// through the proxy the environment names. It runs the calling test (a top-level
// test, which calls it first) again in a child process whose HTTP_PROXY, HTTPS_PROXY
// (either case) and ALL_PROXY point at a listener, with NO_PROXY empty: net/http reads
// them once per process. There send gets the port of a receiver on 127.0.0.1 and
// makes one request to it, through a name its resolver maps to 127.0.0.1, since a
// proxy is skipped for a loopback address. The receiver must get that one request
// and the proxy no connection.
func RequireProxyIgnored(t *testing.T, send func(t *testing.T, port string)) {
	t.Helper()
	if port := os.Getenv(childPort); port != "" {
		req, err := http.NewRequest(http.MethodGet, "http://proxied.test:"+port+"/", nil)
		require.NoError(t, err)
		viaEnv, err := http.ProxyFromEnvironment(req)
		require.NoError(t, err)
		require.NotNil(t, viaEnv, "the environment does ask for a proxy for a name that is not loopback")
		send(t, port)
		return
	}
	proxy := Listen(t, "127.0.0.1:0")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Connection", "close") // no idle connection outlives the child
	}))
	t.Cleanup(srv.Close)

	proxyURL := proxy.URL()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childPort+"="+strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port),
		"HTTP_PROXY="+proxyURL, "HTTPS_PROXY="+proxyURL, "ALL_PROXY="+proxyURL,
		"http_proxy="+proxyURL, "https_proxy="+proxyURL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.EqualValues(t, 1, hits.Load(), "the request reached the receiver directly")
	require.Zero(t, proxy.Accepted(), "the environment's proxy was never dialed")
}
