// Package egresstest holds what the tests of the SSRF guard and of its users check it
// with: a listener that counts the connections it gets (the address a guarded client
// must never reach, or the one it must), a guard and an assertion on its refusals, and
// a child test run with the environment's proxy variables set. It is for tests only:
// a service's non-test code does not import it.
package egresstest

import (
	"context"
	"net"
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

// RunWithProxyEnvironment runs the test named test of this test binary again, in a
// child process whose HTTP_PROXY, HTTPS_PROXY (either case) and ALL_PROXY point at
// proxyURL, with NO_PROXY empty and environ added: net/http reads the proxy variables
// once per process, so a test that they are ignored runs its client in a child. It
// fails t, with the child's output, when the child fails.
func RunWithProxyEnvironment(t testing.TB, test, proxyURL string, environ ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), environ...)
	cmd.Env = append(cmd.Env, "HTTP_PROXY="+proxyURL, "HTTPS_PROXY="+proxyURL, "ALL_PROXY="+proxyURL,
		"http_proxy="+proxyURL, "https_proxy="+proxyURL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
