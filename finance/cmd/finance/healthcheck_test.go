package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/httpserver"
)

func TestHealthcheckProbesReadyz(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ready   error
		wantErr string
	}{
		{name: "ready"},
		{name: "not ready", ready: errors.New("schema at version 1"), wantErr: "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := httpserver.New(slog.New(slog.DiscardHandler))
			httpserver.Health(e, func(context.Context) error { return tc.ready })
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)
			env := []string{"HTTP_ADDR=" + srv.Listener.Addr().String()}
			var out bytes.Buffer
			err := run(context.Background(), []string{"healthcheck"}, env, &out, io.Discard)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "schema at version 1")
			}
			require.Empty(t, out.String(), "a healthcheck says nothing when healthy")
		})
	}
}
