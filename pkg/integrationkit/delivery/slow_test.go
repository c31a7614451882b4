package delivery_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
)

// An attempt is settled however long it took. A receiver that never answers spends
// one counted attempt per timeout and is dead-lettered when the budget runs out; a
// receiver that answers 200 after 5.5 s (longer than any fixed settle window would
// allow) is delivered with one request. Both modes.
func TestSlowAttemptIsSettled(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{delivery.ModeSingle, delivery.ModeBatch} {
		t.Run(mode+"/never answers", func(t *testing.T) {
			t.Parallel()
			b, requests := slowReceiver(t, time.Minute)
			b.enqueue(t, "agg-1", 1)
			b.start(t, delivery.Config{Mode: mode, MaxAttempts: 2, Timeout: 5500 * time.Millisecond,
				Lease: 8 * time.Second, Interval: time.Second})
			rows := b.waitSettled(t, 30*time.Second)
			require.Equal(t, "failed", rows[0].Status)
			require.Equal(t, "max_attempts_exhausted", rows[0].Reason)
			require.Equal(t, 2, rows[0].Attempts)
			require.Equal(t, 2, rows[0].Requests)
			require.EqualValues(t, 2, requests.Load())
			var classes []string
			require.NoError(t, b.db.NewRaw(`SELECT error_class FROM kit_outbox_attempts ORDER BY attempt_no`).
				Scan(context.Background(), &classes))
			require.Equal(t, []string{"timeout", "timeout"}, classes)
		})
		t.Run(mode+"/answers 200 slowly", func(t *testing.T) {
			t.Parallel()
			b, requests := slowReceiver(t, 5500*time.Millisecond)
			b.enqueue(t, "agg-1", 1)
			b.start(t, delivery.Config{Mode: mode, Timeout: 8 * time.Second, Lease: 12 * time.Second,
				Interval: time.Second})
			rows := b.waitSettled(t, 20*time.Second)
			require.Equal(t, "delivered", rows[0].Status)
			require.Equal(t, 1, rows[0].Requests)
			require.EqualValues(t, 1, requests.Load(), "a slow 2xx is sent once")
		})
	}
}

// slowReceiver answers every request, single or batch, 200 after delay (or when the
// test ends), and counts the requests.
func slowReceiver(t *testing.T, delay time.Duration) (*bundle, *atomic.Int64) {
	t.Helper()
	b := newBundle(t)
	var requests atomic.Int64
	done := make(chan struct{})
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, _ := io.ReadAll(r.Body) // so the server notices the client hang up
		select {
		case <-time.After(delay):
		case <-done:
			return
		case <-r.Context().Done():
			return
		}
		acceptAll(w, r, body)
	}))
	t.Cleanup(func() { close(done) })
	return b, &requests
}
