package delivery_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
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
			b := newBundle(t)
			arrived := make(chan struct{}, 1)
			b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // a read body lets the server notice the abort
				arrived <- struct{}{}
				select {
				case <-time.After(c.delay):
				case <-r.Context().Done():
				}
				w.WriteHeader(http.StatusOK)
			}))
			b.enqueue(t, "a", 1)
			stop := b.runWith(t, delivery.Config{ShutdownGrace: c.grace, Timeout: 20 * time.Second, Lease: time.Minute},
				delivery.Deps{})
			<-arrived
			stopped := make(chan error, 1)
			go func() { stopped <- stop() }()
			select {
			case err := <-stopped:
				require.NoError(t, err)
			case <-time.After(c.grace + 5*time.Second):
				t.Fatal("Run did not return after the grace period")
			}
			r := b.rows(t)[0]
			require.Equal(t, c.status, r.Status)
			require.Equal(t, c.leased, r.Leased)
			if c.status == outbox.StatusPending {
				require.Zero(t, r.Requests, "an aborted request is not an attempt")
			}
		})
	}
}
