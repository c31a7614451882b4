package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/faultproxy"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	var handled atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		handled.Add(1)
		_, _ = w.Write([]byte("0123456789abcdefghij"))
	}))
	t.Cleanup(srv.Close)
	p, err := faultproxy.New(srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() (string, error) {
		resp, err := client.Post("http://"+p.Addr()+"/", "text/plain", nil)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	body, err := get()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdefghij", body)

	p.Set(faultproxy.Reset, 0)
	_, err = get()
	require.Error(t, err)

	p.Set(faultproxy.BlackHole, 0)
	start := time.Now()
	_, err = get()
	require.Error(t, err)
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "a black hole answers nothing")

	before := handled.Load()
	p.Set(faultproxy.DropResponse, 0)
	_, err = get()
	require.Error(t, err)
	require.Equal(t, before+1, handled.Load(), "the server handled the request whose answer was dropped")

	p.Set(faultproxy.CutResponse, 0)
	_, err = get()
	require.Error(t, err)

	p.Set(faultproxy.Latency, 300*time.Millisecond)
	start = time.Now()
	body, err = get()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdefghij", body)
	require.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond, "both directions delayed")

	p.Set(faultproxy.SlowBody, 5*time.Millisecond)
	body, err = get()
	require.NoError(t, err, "a slow body still arrives whole within the timeout")
	require.Contains(t, body, "0123")

	p.Set(faultproxy.Pass, 0)
	body, err = get()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdefghij", body)
	require.EqualValues(t, 6, p.Faulted())
}
