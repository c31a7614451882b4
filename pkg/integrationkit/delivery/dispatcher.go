// Package delivery is the dispatcher: it drains an outbox table over HTTP, exactly once
// in effect when the receiver deduplicates by X-Idempotency-Key.
//
// It wakes on LISTEN/NOTIFY for low latency and on a robfig/cron tick as the safety
// net, claims due events with FOR UPDATE SKIP LOCKED in a short transaction, sends them
// outside any transaction with bounded concurrency, and settles each attempt (with its
// attempt row) in one statement fenced by the lease. Any number of replicas share one
// table with no coordinator.
package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/webhook"
)

// Dispatcher delivers the events of one outbox table.
type Dispatcher struct {
	db       *bun.DB
	store    *outbox.Store
	signer   *webhook.Signer
	client   *http.Client
	breaker  *breaker.Breaker
	observer Observer
	tracer   trace.Tracer // nil: tracing off
	cfg      Config
	log      *slog.Logger

	randMu sync.Mutex
	rand   *rand.Rand

	receivers *receivers
	wake      chan struct{}
	settler   *settler      // set by Run: settles single requests in flight together
	finished  atomic.Uint64 // jobs ended, each freeing its request slot
}

// New returns a dispatcher over store in db, signing requests with signer.
func New(db *bun.DB, store *outbox.Store, signer *webhook.Signer, cfg Config, deps Deps) (*Dispatcher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := logging.OrDiscard(deps.Log)
	var obs Observer = noObserver{}
	if deps.Observer != nil {
		obs = deps.Observer
	}
	r := deps.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	d := &Dispatcher{
		db: db, store: store, signer: signer, cfg: cfg, log: log.With("component", "dispatcher"),
		client: newClient(cfg, deps.Guard), rand: r, breaker: deps.Breaker, observer: obs,
		receivers: newReceivers(), wake: make(chan struct{}, 1),
	}
	if deps.TracerProvider != nil {
		d.tracer = deps.TracerProvider.Tracer(tracerScope)
	}
	return d, nil
}

// newClient is the dispatcher's guarded client: one request bounded by Timeout, with
// idle connections for every request slot.
func newClient(cfg Config, guard *egress.Dialer) *http.Client {
	return egress.NewClient(guard, egress.ClientConfig{
		Timeout:             cfg.Timeout,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency,
	})
}

// Wake asks the dispatcher to look for due events now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then stops claiming, lets in-flight requests finish
// within ShutdownGrace (aborting and releasing the rest) and returns nil.
func (d *Dispatcher) Run(ctx context.Context) error {
	tick := cron.New()
	if _, err := tick.AddFunc("@every "+d.cfg.Interval.String(), d.Wake); err != nil {
		return fmt.Errorf("delivery: schedule tick: %w", err)
	}
	tick.Start()
	defer tick.Stop()

	listenCtx, stopListen := context.WithCancel(ctx)
	var listenWG sync.WaitGroup
	listenWG.Go(func() { d.listen(listenCtx) })
	defer func() { stopListen(); listenWG.Wait() }()

	// In-flight requests outlive ctx by the grace period; hard aborts them after it.
	hard, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	var inflight sync.WaitGroup
	slots := make(chan struct{}, d.cfg.Concurrency)
	// The settler outlives every request: it stops once the last one has settled.
	d.settler = newSettler(d, func() int { return len(slots) }, d.cfg.Batch)
	var settling sync.WaitGroup
	settling.Go(func() { d.settler.run(ctx) })
	defer func() { close(d.settler.in); settling.Wait() }()

	d.loop(ctx, hard, slots, &inflight)

	done := make(chan struct{})
	go func() { inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.cfg.ShutdownGrace):
		d.log.Warn("shutdown grace over, aborting in-flight deliveries")
		abort()
		<-done
	}
	return nil
}

// claimQuorum and claimLinger: in single mode, while requests are in flight, the loop
// claims again once an eighth of the slots are free, not at each finished request, so
// a busy dispatcher claims (and its requests settle) several events a statement; it
// waits for that at most claimLinger, so a free slot never idles longer behind slow
// requests. An idle dispatcher claims at once.
const (
	claimQuorum = 8
	claimLinger = 10 * time.Millisecond
)

// mayClaim says whether the loop claims now, with free of its slots free and busy of
// them in flight; full says the last claim filled its limit, so more is due. A
// dispatcher with nothing in flight claims at once. In batch mode another batch goes
// while one is in flight only when the last claim was full: a backlog then fills both,
// while a batch of what arrived meanwhile waits for the answer and grows. In single
// mode it claims once a quorum of slots is free (the loop also claims after
// claimLinger).
func (d *Dispatcher) mayClaim(free, busy int, full bool) bool {
	switch {
	case free == 0:
		return false
	case busy == 0:
		return true
	case d.cfg.Mode == ModeBatch:
		return full
	default:
		return free >= max(1, (free+busy)/claimQuorum)
	}
}

// loop claims as many events as there are free request slots, hands each to a worker,
// and sleeps until a notice, a tick, a finished worker or the next due time.
func (d *Dispatcher) loop(ctx, hard context.Context, slots chan struct{}, inflight *sync.WaitGroup) {
	full := false
	var lingering time.Time // since when a free slot waits for a quorum (single mode)
	var behind leftOut
	for ctx.Err() == nil {
		free := cap(slots) - len(slots)
		claimed := 0
		limit := min(free, d.cfg.Batch)
		if d.cfg.Mode == ModeBatch {
			limit = d.receivers.claimLimit(d.cfg.Batch) // one slot carries a whole batch
		}
		wait := !d.mayClaim(free, len(slots), full) // a finished request wakes the loop
		if wait && free > 0 && d.cfg.Mode == ModeSingle {
			if lingering.IsZero() {
				lingering = time.Now()
			}
			wait = time.Since(lingering) < claimLinger
		}
		if !wait && !behind.idle(d) {
			lingering = time.Time{}
			before := leftOut{finished: d.finished.Load(), lifted: d.receivers.liftedCount()}
			recs, leftSome, err := d.claim(ctx, limit)
			if err != nil {
				d.log.Error("claim failed", "err", err)
			}
			behind = leftOut{}
			if len(recs) == 0 && leftSome {
				behind, behind.at = before, time.Now()
			}
			full = len(recs) == limit
			for _, j := range d.jobs(recs) {
				slots <- struct{}{}
				inflight.Go(func() {
					defer func() { <-slots; d.finished.Add(1); d.Wake() }()
					j(hard)
				})
			}
			claimed = len(recs)
		}
		if claimed > 0 && claimed == limit {
			continue // there may be more: claim again as soon as slots free up
		}
		d.sleep(ctx, claimed > 0 || wait, wakeBy(lingering, behind))
	}
}

// leftOut is a claim that found nothing due but the events it left in the queue
// (those of destinations behind a probe): lifted and finished were the counts of
// probes ended and holds lifted, and of jobs ended, just before it was made.
type leftOut struct {
	at       time.Time
	lifted   uint64
	finished uint64
}

// idle says another claim would only read past the same events again: no job has
// ended, no probe ended nor hold lifted, and probeHold has not passed since. A new
// event of another destination then waits for one of those, probeHold at most, and a
// probed destination's backlog is not read again at each new event.
func (l leftOut) idle(d *Dispatcher) bool {
	return !l.at.IsZero() && time.Since(l.at) < probeHold &&
		d.finished.Load() == l.finished && d.receivers.liftedCount() == l.lifted
}

// claim leases up to limit events, none of the destinations whose probe is out
// (leftSome: there were such destinations). The statement is not cancelled by a shutdown: a cancelled claim may still have
// committed on the server and left leases nobody works on. Events claimed as the
// shutdown began are released at once instead.
func (d *Dispatcher) claim(ctx context.Context, limit int) (recs []outbox.Record, leftSome bool, err error) {
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	start := time.Now()
	except := d.receivers.unclaimable()
	recs, err = d.store.ClaimExcept(claimCtx, d.db, d.cfg.Owner, limit, d.cfg.Lease, except)
	if err != nil {
		return nil, len(except) > 0, err
	}
	d.traceClaim(recs, start, time.Now())
	if ctx.Err() != nil {
		d.release(claimCtx, recs)
		return nil, len(except) > 0, nil
	}
	return recs, len(except) > 0, nil
}

// job is a unit of work on one request slot: the slot comes back, and the loop is
// woken, when it ends, its outcomes settled (which may let an aggregate's next event
// go).
type job func(ctx context.Context)

// jobs splits claimed records into units of work: in batch mode one per destination;
// in single mode one per event, the events of a destination sharing one question to
// its circuit.
func (d *Dispatcher) jobs(recs []outbox.Record) []job {
	var out []job
	for _, group := range groupByDestination(recs) {
		if d.cfg.Mode == ModeBatch {
			out = append(out, func(ctx context.Context) { d.deliverBatch(ctx, group) })
			continue
		}
		adm := &admission{}
		for _, rec := range group {
			out = append(out, func(ctx context.Context) { d.deliver(ctx, rec, adm) })
		}
	}
	return out
}

// sleep waits for a reason to claim again, or until (when not zero). With nothing
// claimed it also wakes for the earliest scheduled retry, so a Retry-After of one
// second is honoured to the second.
func (d *Dispatcher) sleep(ctx context.Context, busy bool, until time.Time) {
	wait := d.cfg.Interval
	if !until.IsZero() {
		wait = min(wait, max(0, time.Until(until)))
	}
	if !busy {
		if due, ok, err := d.store.NextDue(ctx, d.db); err == nil && ok && due > 0 {
			wait = min(wait, due+10*time.Millisecond)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-d.wake:
	case <-t.C:
	}
}

// wakeBy is when the loop looks again at the latest, short of a wake-up: a single-mode
// loop lingering for a quorum once claimLinger is over, one behind a probe once
// probeHold is (zero: neither).
func wakeBy(lingering time.Time, behind leftOut) time.Time {
	until := behind.at
	if !until.IsZero() {
		until = until.Add(probeHold)
	}
	if !lingering.IsZero() && (until.IsZero() || lingering.Add(claimLinger).Before(until)) {
		until = lingering.Add(claimLinger)
	}
	return until
}

func (d *Dispatcher) jitter(failure int) time.Duration {
	d.randMu.Lock()
	defer d.randMu.Unlock()
	return d.cfg.Backoff.FullJitter(failure, d.rand)
}
