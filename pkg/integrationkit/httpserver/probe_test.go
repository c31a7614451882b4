package httpserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadyURL(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"0.0.0.0:8081":   "http://127.0.0.1:8081/readyz",
		":8081":          "http://127.0.0.1:8081/readyz",
		"[::]:8082":      "http://127.0.0.1:8082/readyz",
		"127.0.0.1:9000": "http://127.0.0.1:9000/readyz",
		"[::1]:9000":     "http://[::1]:9000/readyz",
		"finance:8081":   "http://finance:8081/readyz",
	}
	for addr, want := range cases {
		got, err := readyURL(addr)
		require.NoError(t, err, addr)
		require.Equal(t, want, got, addr)
	}
	_, err := readyURL("8081")
	require.ErrorContains(t, err, `listen address "8081"`)
}

func TestProbeReady(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		notDone error
		wantErr string
	}{
		{name: "ready"},
		{name: "not ready", notDone: errors.New("migrations pending"), wantErr: "503 Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := New(slog.New(slog.DiscardHandler))
			Health(e, func(context.Context) error { return tc.notDone })
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)
			_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = ProbeReady(ctx, "0.0.0.0:"+port)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, "migrations pending", "the reason reaches the healthcheck log")
		})
	}
}

func TestProbeReadyWithoutServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	err = ProbeReady(context.Background(), addr)
	require.ErrorContains(t, err, "connection refused")
}
