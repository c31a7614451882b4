package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/webhook"
)

// pausing is a receiver behind two destinations, a and b, counting the requests each
// gets, with a breaker whose pauses defer for an hour: an event of a paused
// destination that goes out within seconds of Resume was hastened, not waited out.
type pausing struct {
	ctx      context.Context
	db       *bun.DB
	store    *outbox.Store
	br       *breaker.Breaker
	a, b     string
	gotA     atomic.Int64
	gotB     atomic.Int64
	dispatch func(obs delivery.Observer, replicas int)
}

func setupPausing(t *testing.T) *pausing {
	t.Helper()
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, breakerSchema)
	require.NoError(t, err)
	p := &pausing{ctx: ctx, db: db, store: store}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			p.gotA.Add(1)
		} else {
			p.gotB.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	p.a, p.b = srv.URL+"/a", srv.URL+"/b"
	p.br, err = breaker.New(breaker.Config{Table: "kit_breakers", PausedWait: time.Hour})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	p.dispatch = func(obs delivery.Observer, replicas int) {
		for i := range replicas {
			d, err := delivery.New(db, store, webhook.NewSigner([][]byte{secret}), delivery.Config{
				Owner: fmt.Sprintf("replica-%d", i), Concurrency: 2, Batch: 2, Interval: time.Minute,
				Backoff: backoff.Schedule{time.Hour}, MaxAttempts: 10,
			}, delivery.Deps{Breaker: p.br, Observer: obs, Log: slog.New(slog.DiscardHandler), Guard: loopback(t)})
			require.NoError(t, err)
			wg.Go(func() { _ = d.Run(runCtx) })
		}
	}
	return p
}

func (p *pausing) enqueue(t *testing.T, dest, prefix string, n int) {
	t.Helper()
	for i := range n {
		_, err := p.store.Enqueue(p.ctx, p.db, outbox.Event{Type: "thing.happened", AggregateKey: fmt.Sprintf("%s-%d", prefix, i),
			Sequence: 1, IdempotencyKey: fmt.Sprintf("%s-%d", prefix, i), Destination: dest, Payload: map[string]int{"i": i}})
		require.NoError(t, err)
	}
}

func (p *pausing) count(t *testing.T, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, p.db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE `+where, args...).Scan(p.ctx, &n))
	return n
}

// Two replicas send nothing to a paused destination: its events are deferred without
// a request and without spending attempts, while another destination's go out.
// Resumed, and the deferred events hastened as an operator's Resume does, they go out
// at once, not after the pause's hour-long deferral.
func TestPausedDestinationGetsNoRequestUntilResumed(t *testing.T) {
	t.Parallel()
	p := setupPausing(t)
	changed, err := p.br.Pause(p.ctx, p.db, p.a)
	require.NoError(t, err)
	require.True(t, changed)
	obs := newObserved()
	p.dispatch(obs, 2)
	p.enqueue(t, p.a, "a", 10)
	p.enqueue(t, p.b, "b", 10)

	obs.wait(t, 10*time.Second, "b's events delivered, a's deferred", func(h *history) bool {
		return len(h.records(delivered(p.b))) == 10 && len(h.records(deferred(outbox.DeferredByPause))) == 10
	})
	require.EqualValues(t, 10, p.gotB.Load())
	require.Equal(t, 10, p.count(t, `deferred_by = ?`, outbox.DeferredByPause))
	require.Zero(t, p.gotA.Load(), "nothing reached the paused destination")
	require.Zero(t, p.count(t, `destination = ? AND (request_count > 0 OR delivery_attempts > 0)`, p.a),
		"no request, no attempt spent")

	err = p.db.RunInTx(p.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := p.br.Resume(ctx, tx, p.a); err != nil {
			return err
		}
		if _, err := p.store.Hasten(ctx, tx, p.a, outbox.DeferredByPause); err != nil {
			return err
		}
		return p.store.Notify(ctx, tx)
	})
	require.NoError(t, err)
	obs.wait(t, 5*time.Second, "a's events delivered", func(h *history) bool { return len(h.records(delivered(p.a))) == 10 })
	require.EqualValues(t, 10, p.gotA.Load())
	require.Equal(t, 20, p.count(t, `delivery_status = 'delivered'`))
}

// resumeOnDeferral resumes the destination right after the first event is deferred for
// its pause, as an operator's Resume on another replica does when it commits between
// this replica's look at the pause and its deferral: the Resume's own hastening came
// too early to see the deferred event.
type resumeOnDeferral struct {
	t      *testing.T
	once   sync.Once
	resume func() error
}

func (o *resumeOnDeferral) Settled(_ context.Context, _ outbox.Record, out outbox.Outcome) {
	if out.Label == "paused" {
		o.once.Do(func() { require.NoError(o.t, o.resume()) })
	}
}

func (o *resumeOnDeferral) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {
}

// An event deferred for a pause that ended meanwhile goes out within seconds, not
// after the pause's hour-long deferral.
func TestDeferralAfterTheResumeIsHastened(t *testing.T) {
	t.Parallel()
	p := setupPausing(t)
	_, err := p.br.Pause(p.ctx, p.db, p.a)
	require.NoError(t, err)
	p.enqueue(t, p.a, "a", 1)
	obs := newObserved()
	p.dispatch(delivery.Observers{&resumeOnDeferral{t: t, resume: func() error {
		_, err := p.br.Resume(p.ctx, p.db, p.a)
		return err
	}}, obs}, 1)
	obs.wait(t, 5*time.Second, "the event delivered", func(h *history) bool { return len(h.records(delivered(p.a))) == 1 })
	require.EqualValues(t, 1, p.gotA.Load())
}
