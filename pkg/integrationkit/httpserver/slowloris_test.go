package httpserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/httpserver"
)

// slowClient sends a request head one byte every interval, as a slow-loris attacker
// does, until the server hangs up or stop closes. It reports whether the server hung up.
func slowClient(conn net.Conn, interval time.Duration, stop <-chan struct{}) (closedByServer bool) {
	hungUp := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, conn); close(hungUp) }()
	defer func() { _ = conn.Close(); <-hungUp }()
	head := []byte("POST /webhooks/finance HTTP/1.1\r\nHost: x\r\nX-Padding: ")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-hungUp:
			return true
		case <-stop:
			return false
		case <-tick.C:
			_, _ = conn.Write([]byte{head[min(i, len(head)-1)]})
		}
	}
}

// 200 connections trickling their headers do not keep the server from answering a
// normal request within its budget, and ReadHeaderTimeout hangs up on every one of
// them.
func TestSlowLorisDoesNotStarveOtherClients(t *testing.T) {
	t.Parallel()
	const slow, readHeader, budget = 200, time.Second, time.Second
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpserver.ServeListener(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}), httpserver.Timeouts{ReadHeader: readHeader}, 5*time.Second, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-served) })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var hungUp atomic.Int64
	for range slow {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		wg.Go(func() {
			if slowClient(conn, 50*time.Millisecond, stop) {
				hungUp.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for range 10 {
		start := time.Now()
		resp, err := client.Get("http://" + ln.Addr().String() + "/healthz")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Less(t, time.Since(start), budget)
	}
	require.Eventually(t, func() bool { return hungUp.Load() == slow }, readHeader+5*time.Second, 20*time.Millisecond,
		"ReadHeaderTimeout hangs up on every slow client")
}
