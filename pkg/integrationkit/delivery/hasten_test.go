package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
)

// As TestDeferralAfterTheCircuitClosedIsHastened, but the dispatcher is already
// idle when the event arrives (its start-up wake spent): the hastened event must still
// go within seconds, not at the next tick (Interval, here a minute).
func TestHastenedEventGoesWithoutATick(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	ctx := context.Background()
	delivered := make(chan struct{}, 1)
	b.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	br := b.newBreaker(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, ProbeLease: 30 * time.Second})
	_, err := br.Failure(ctx, b.db, b.url, breaker.Permit{})
	require.NoError(t, err)
	probe, err := br.Acquire(ctx, b.db, b.url)
	require.NoError(t, err)
	require.True(t, probe.Probe)
	obs := &onFirstDeferral{t: t, label: "circuit_open", do: func() error {
		tr, err := br.Success(ctx, b.db, b.url, probe)
		if err == nil && tr != breaker.Recovered {
			err = fmt.Errorf("not recovered: %q", tr)
		}
		return err
	}}
	b.runWith(t, delivery.Config{Owner: "replica", Concurrency: 4, Batch: 10, Interval: time.Minute,
		Backoff: backoff.Schedule{50 * time.Millisecond}, MaxAttempts: 10}, delivery.Deps{Breaker: br, Observer: obs})
	time.Sleep(500 * time.Millisecond) // idle: the start-up wakes are spent
	b.enqueue(t, "agg", 1)
	select {
	case <-delivered:
	case <-time.After(5 * time.Second):
		t.Fatal("the hastened event was not sent within 5 s")
	}
}

// The same for a pause that ended between the look and the deferral.
func TestResumedEventGoesWithoutATick(t *testing.T) {
	t.Parallel()
	p := setupPausing(t)
	_, err := p.br.Pause(context.Background(), p.db, p.a)
	require.NoError(t, err)
	p.dispatch(t, &onFirstDeferral{t: t, label: "paused", do: func() error {
		_, err := p.br.Resume(context.Background(), p.db, p.a)
		return err
	}}, 1)
	time.Sleep(500 * time.Millisecond)
	p.enqueueEach(t, p.a, keys("a", 1))
	p.observed.wait(t, 5*time.Second, "the event delivered", func(h *history) bool { return len(h.records(delivered(p.a))) == 1 })
}
