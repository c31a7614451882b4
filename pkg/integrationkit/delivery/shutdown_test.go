package delivery_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/webhook"
)

// On shutdown a request that outlives the grace period is aborted and its lease
// released, so another replica can send it at once; one that finishes in time is
// settled as usual.
func TestShutdownDrainsOrReleases(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		delay  time.Duration
		grace  time.Duration
		status string
		leased bool
	}{
		{"finishes within grace", 300 * time.Millisecond, 5 * time.Second, outbox.StatusDelivered, false},
		{"aborted after grace", 10 * time.Second, 200 * time.Millisecond, outbox.StatusPending, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, _, store := outboxtest.Setup(t)
			ctx := context.Background()
			arrived := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // a read body lets the server notice the abort
				arrived <- struct{}{}
				select {
				case <-time.After(c.delay):
				case <-r.Context().Done():
				}
				w.WriteHeader(http.StatusOK)
			}))
			t.Cleanup(srv.Close)
			_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: "a", Sequence: 1,
				IdempotencyKey: "k", Destination: srv.URL, Payload: map[string]int{}})
			require.NoError(t, err)
			d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}),
				delivery.Config{ShutdownGrace: c.grace, Timeout: 20 * time.Second, Lease: time.Minute},
				delivery.Deps{Log: slog.New(slog.DiscardHandler), Guard: loopback(t)})
			require.NoError(t, err)
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- d.Run(runCtx) }()
			<-arrived
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(c.grace + 5*time.Second):
				t.Fatal("Run did not return after the grace period")
			}
			var r struct {
				Status   string `bun:"delivery_status"`
				Leased   bool   `bun:"leased"`
				Requests int    `bun:"request_count"`
			}
			require.NoError(t, db.NewRaw(`SELECT delivery_status, lease_token IS NOT NULL AS leased, request_count FROM kit_outbox`).Scan(ctx, &r))
			require.Equal(t, c.status, r.Status)
			require.Equal(t, c.leased, r.Leased)
			if c.status == outbox.StatusPending {
				require.Zero(t, r.Requests, "an aborted request is not an attempt")
			}
		})
	}
}
