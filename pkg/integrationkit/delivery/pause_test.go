package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
)

// pausing is a receiver behind two destinations, a and b, counting the requests each
// gets, with a breaker whose pauses defer for an hour: an event of a paused
// destination that goes out within seconds of Resume was hastened, not waited out.
type pausing struct {
	*bundle
	br         *breaker.Breaker
	a, b       string
	gotA, gotB atomic.Int64
}

func setupPausing(t *testing.T) *pausing {
	t.Helper()
	p := &pausing{bundle: newBundle(t)}
	p.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			p.gotA.Add(1)
		} else {
			p.gotB.Add(1)
		}
	}))
	p.a, p.b = p.url+"/a", p.url+"/b"
	p.br = p.newBreaker(t, breaker.Config{PausedWait: time.Hour})
	return p
}

// dispatch runs replicas dispatchers consulting the breaker, telling obs besides
// p.observed, until the test ends.
func (p *pausing) dispatch(t *testing.T, obs delivery.Observer, replicas int) {
	t.Helper()
	p.replicas(t, replicas, delivery.Config{Concurrency: 2, Batch: 2, Interval: time.Minute,
		Backoff: backoff.Schedule{time.Hour}, MaxAttempts: 10}, delivery.Deps{Breaker: p.br, Observer: obs})
}

// Two replicas send nothing to a paused destination: its events are deferred without
// a request and without spending attempts, while another destination's go out.
// Resumed, and the deferred events hastened as an operator's Resume does, they go out
// at once, not after the pause's hour-long deferral.
func TestPausedDestinationGetsNoRequestUntilResumed(t *testing.T) {
	t.Parallel()
	p := setupPausing(t)
	ctx := context.Background()
	changed, err := p.br.Pause(ctx, p.db, p.a)
	require.NoError(t, err)
	require.True(t, changed)
	p.dispatch(t, nil, 2)
	p.enqueueEach(t, p.a, keys("a", 10))
	p.enqueueEach(t, p.b, keys("b", 10))

	p.observed.wait(t, 10*time.Second, "b's events delivered, a's deferred", func(h *history) bool {
		return len(h.records(delivered(p.b))) == 10 && len(h.records(deferred(outbox.DeferredByPause))) == 10
	})
	require.EqualValues(t, 10, p.gotB.Load())
	require.Equal(t, 10, p.count(t, `deferred_by = ?`, outbox.DeferredByPause))
	require.Zero(t, p.gotA.Load(), "nothing reached the paused destination")
	require.Zero(t, p.count(t, `destination = ? AND (request_count > 0 OR delivery_attempts > 0)`, p.a),
		"no request, no attempt spent")

	err = p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := p.br.Resume(ctx, tx, p.a); err != nil {
			return err
		}
		if _, err := p.store.Hasten(ctx, tx, p.a, outbox.DeferredByPause); err != nil {
			return err
		}
		return p.store.Notify(ctx, tx)
	})
	require.NoError(t, err)
	p.observed.wait(t, 5*time.Second, "a's events delivered", func(h *history) bool { return len(h.records(delivered(p.a))) == 10 })
	require.EqualValues(t, 10, p.gotA.Load())
	require.Equal(t, 20, p.count(t, `delivery_status = 'delivered'`))
}

// An event deferred for a pause that ended meanwhile goes out within seconds, not
// after the pause's hour-long deferral, whether it was waiting when the dispatcher
// started or came once the dispatcher was idle.
func TestDeferralAfterTheResumeIsHastened(t *testing.T) {
	t.Parallel()
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			t.Parallel()
			p := setupPausing(t)
			_, err := p.br.Pause(context.Background(), p.db, p.a)
			require.NoError(t, err)
			if !idle {
				p.enqueueEach(t, p.a, keys("a", 1))
			}
			// An operator's Resume on another replica commits between the dispatcher's
			// look at the pause and its deferral.
			p.dispatch(t, &onFirstDeferral{t: t, label: "paused", do: func() error {
				_, err := p.br.Resume(context.Background(), p.db, p.a)
				return err
			}}, 1)
			if idle {
				time.Sleep(500 * time.Millisecond) // the scenario: the start-up wakes are spent
				p.enqueueEach(t, p.a, keys("a", 1))
			}
			p.observed.wait(t, 5*time.Second, "the event delivered", func(h *history) bool { return len(h.records(delivered(p.a))) == 1 })
			require.EqualValues(t, 1, p.gotA.Load())
		})
	}
}
