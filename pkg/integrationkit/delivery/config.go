package delivery

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/egress"
)

// Config tunes a Dispatcher. Zero fields take the defaults documented on each field.
type Config struct {
	// Owner names this replica in leases (default: hostname and pid).
	Owner string
	// Interval is the safety-net poll, a robfig/cron "@every" tick (default 5 s).
	Interval time.Duration
	// Batch is the most events claimed at once (default DefaultBatch).
	Batch int
	// Concurrency bounds requests in flight (default BatchConcurrency in batch mode,
	// SingleConcurrency in single mode).
	Concurrency int
	// Lease is how long a claim stays with this replica (default 30 s); it must exceed
	// Timeout so a live request is never reclaimed.
	Lease time.Duration
	// Timeout bounds one request, body included (default 10 s).
	Timeout time.Duration
	// Backoff is the full-jitter schedule (default 5s,30s,5m,30m,4h).
	Backoff backoff.Schedule
	// MaxAttempts counted attempts before an event is dead-lettered (default 8).
	MaxAttempts int
	// ShutdownGrace is how long in-flight requests may finish after the context ends
	// (default 10 s); past it they are aborted and their leases released.
	ShutdownGrace time.Duration
	// MaxResponseBytes bounds how much of a response is read (default 64 KiB).
	MaxResponseBytes int64
	// Mode is ModeSingle (default: one request per event) or ModeBatch (a lone event
	// goes at once as a batch of one, a backlog in batches, and a receiver without the
	// batch endpoint gets single requests). finance runs in batch mode by default.
	Mode string
	// BatchSuffix is appended to an event's destination to reach the batch endpoint
	// (default "/batch").
	BatchSuffix string
}

// DefaultBatch is Config.Batch when unset: the most events one claim, and so one batch
// request, carries. Smart batching keeps batches small under light load (a batch takes
// what arrived while the last was in flight); the bound matters for a backlog, where
// fewer, larger requests cost less per event.
const DefaultBatch = 400

// BatchConcurrency is Config.Concurrency in batch mode when unset: batches in flight
// per replica. A second goes only while the last claim came back full (a backlog);
// otherwise what arrives waits for the answer and goes as one bigger batch.
const BatchConcurrency = 2

// SingleConcurrency is Config.Concurrency in single mode when unset: requests in flight
// per replica. Each carries one event, so many go at once; the dispatcher claims, and
// settles, several of them a statement (a claim waits for an eighth of the slots to be
// free while requests are in flight). 100, as many as the workers of the River setup
// make bench compares with: in alternating drains of 20,000 events on two cores, 100
// in flight delivered 1,109-1,239 events/s where 64 delivered 955-982.
const SingleConcurrency = 100

func (c Config) withDefaults() Config {
	host, _ := os.Hostname()
	c.Owner = cmp.Or(c.Owner, fmt.Sprintf("%s/%d", host, os.Getpid()))
	c.Interval = cmp.Or(c.Interval, 5*time.Second)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.Mode = cmp.Or(c.Mode, ModeSingle)
	if c.Concurrency == 0 && c.Mode == ModeBatch {
		c.Concurrency = BatchConcurrency
	}
	c.Concurrency = cmp.Or(c.Concurrency, SingleConcurrency)
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.Timeout = cmp.Or(c.Timeout, 10*time.Second)
	if len(c.Backoff) == 0 {
		c.Backoff = backoff.DefaultSchedule
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 8)
	c.ShutdownGrace = cmp.Or(c.ShutdownGrace, 10*time.Second)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, 64<<10)
	c.BatchSuffix = cmp.Or(c.BatchSuffix, "/batch")
	return c
}

// Validate reports the first invalid field, by name.
func (c Config) Validate() error {
	switch {
	case c.Batch < 1:
		return errors.New("delivery: Batch must be at least 1")
	case c.Concurrency < 1:
		return errors.New("delivery: Concurrency must be at least 1")
	case c.MaxAttempts < 1:
		return errors.New("delivery: MaxAttempts must be at least 1")
	case c.Mode != "" && c.Mode != ModeSingle && c.Mode != ModeBatch:
		return fmt.Errorf("delivery: Mode must be %q or %q, not %q", ModeSingle, ModeBatch, c.Mode)
	case c.Lease <= c.Timeout+time.Second:
		return fmt.Errorf("delivery: Lease (%s) must exceed Timeout (%s) by more than a second, or live requests get reclaimed", c.Lease, c.Timeout)
	}
	for i, d := range c.Backoff {
		if d <= 0 {
			return fmt.Errorf("delivery: Backoff step %d must be positive", i+1)
		}
	}
	return nil
}

// Deps are the dispatcher's collaborators: the logger, the randomness of jitter (tests
// replace both), the circuit breaker, and the SSRF guard every connection is dialed
// through.
type Deps struct {
	Log  *slog.Logger
	Rand *rand.Rand
	// Breaker, when set, guards each destination with a cluster-wide circuit.
	Breaker *breaker.Breaker
	// Observer, when set, hears every settled outcome and circuit change.
	Observer Observer
	// Guard checks every address the dispatcher dials; its client is
	// egress.NewClient's (nil: egress's default policy, public destinations on 80 and
	// 443 only).
	Guard *egress.Dialer
	// TracerProvider, when set, traces each delivery of an event written under a trace
	// (see trace.go); nil starts no span.
	TracerProvider trace.TracerProvider
}
