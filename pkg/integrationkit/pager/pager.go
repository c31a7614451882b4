// Package pager pages on-call about what the dispatcher cannot fix by itself, without
// ever slowing it down, and without storms.
//
// Alerts reach the table two ways. Pages owed by another table's rows (a dead letter,
// a circuit that opened: see Debtor) are written there by the statement that made the
// change, so no crash loses them; Run takes them into the alert table, each exactly
// once across replicas. Notify, for alerts that can be derived again (an old pending
// event), never blocks: it counts the alert into an in-memory map keyed by Alert.Key,
// which Run drains into the table. Run then sends each key that is due as one message
// with a count ("50 × events dead-lettered in the last 1m; e.g. …"), one row per key
// shared by every replica. A key is sent at most once per
// Config.Repeat across the whole cluster; its first occurrence waits Config.Gather for
// companions so a burst becomes one message. A message that could not be sent (Slack
// down, slow or answering 500) stays in the table and is retried with backoff.
//
// The table, named by the service (Config.Table), has the shape Schema returns.
package pager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/pgdb"
)

// Alert is one occurrence of something on-call must hear about. Occurrences with the
// same Key are counted into one message.
type Alert struct {
	// Key deduplicates: one row, one message per Repeat, for all occurrences of a key.
	Key string
	// Kind names the alert for machines (dead_letter, circuit_opened, …).
	Kind string
	// Title says what happened, in the plural form a count reads well with.
	Title string
	// EventID, Aggregate and Error describe the latest occurrence (shown as "e.g.").
	EventID   string
	Aggregate string
	Error     string
	// Detail is one more line of context (optional).
	Detail string
}

// Config tunes a Pager; zero fields take the defaults.
type Config struct {
	// Table holds the alert rows.
	Table string
	// Service names the sender in every message (e.g. "finance").
	Service string
	// AggregateLabel names the aggregate in messages (default "aggregate").
	AggregateLabel string
	// DashboardURL is linked from every message (optional).
	DashboardURL string
	// Links returns the deep links of a message about a subject, as paths relative
	// to DashboardURL (optional; nothing without DashboardURL). A path that would
	// leave the dashboard is dropped.
	Links func(Subject) []Link
	// Runbooks names, by alert kind, the runbook section on-call should read
	// (optional); it is written on its own line of the message.
	Runbooks map[string]string
	// Gather is how long a key's first occurrence waits for more (default 5 s).
	Gather time.Duration
	// Repeat is the least time between two messages of one key (default 1 min).
	Repeat time.Duration
	// SendTimeout bounds one message (default 10 s).
	SendTimeout time.Duration
	// Poll is the longest the sender sleeps between looks at the table (default 10 s).
	Poll time.Duration
	// MaxKeys bounds the distinct keys buffered in memory (default 1000); past it new
	// keys are counted as dropped and logged.
	MaxKeys int
	// Retry is the backoff after failed sends (default 2s, 10s, 30s, 1m, 5m).
	Retry []time.Duration
}

func (c Config) withDefaults() Config {
	c.AggregateLabel = cmp.Or(c.AggregateLabel, "aggregate")
	c.Gather = cmp.Or(c.Gather, 5*time.Second)
	c.Repeat = cmp.Or(c.Repeat, time.Minute)
	c.SendTimeout = cmp.Or(c.SendTimeout, 10*time.Second)
	c.Poll = cmp.Or(c.Poll, 10*time.Second)
	c.MaxKeys = cmp.Or(c.MaxKeys, 1000)
	if len(c.Retry) == 0 {
		c.Retry = []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute}
	}
	return c
}

// Validate reports the first invalid field, by name.
func (c Config) Validate() error {
	switch {
	case !pgdb.ValidIdentifier(c.Table):
		return fmt.Errorf("pager: Table %q is not a plain lowercase identifier", c.Table)
	case c.Gather < 0 || c.Repeat <= 0 || c.SendTimeout <= 0 || c.Poll <= 0:
		return errors.New("pager: Gather, Repeat, SendTimeout and Poll must be positive")
	case c.MaxKeys < 1:
		return errors.New("pager: MaxKeys must be at least 1")
	}
	return nil
}

// Sender delivers one message to on-call; Slack senders and a log-only one exist.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// Deps are the pager's collaborators: the logger and where messages go (nil sends
// nothing and only logs them).
type Deps struct {
	Log    *slog.Logger
	Sender Sender
	// Debtors are the tables whose rows owe pages (DeliveryDebts); the pager takes
	// what they owe when woken and every Config.Poll.
	Debtors []Debtor
}

// Pager records alerts and sends them; see the package documentation.
type Pager struct {
	db      *bun.DB
	cfg     Config
	log     *slog.Logger
	sender  Sender
	store   store
	queue   *queue
	wake    chan struct{}
	debtors []Debtor
	owed    chan struct{}
}

// New returns a pager keeping its state in cfg.Table of db.
func New(db *bun.DB, cfg Config, deps Deps) (*Pager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := logging.OrDiscard(deps.Log).With("component", "pager")
	sender := deps.Sender
	if sender == nil {
		sender = LogSender{Log: log}
	}
	return &Pager{
		db: db, cfg: cfg, log: log, sender: sender,
		store: store{table: cfg.Table}, queue: newQueue(cfg.MaxKeys),
		wake: make(chan struct{}, 1), debtors: deps.Debtors, owed: make(chan struct{}, 1),
	}, nil
}

// Notify counts one occurrence of a. It never blocks and never fails: the durable row
// is written by Run.
func (p *Pager) Notify(a Alert) {
	if a.Key == "" {
		a.Key = a.Kind
	}
	p.queue.add(a)
}

// Run writes notified alerts to the table and sends due messages until ctx ends; it
// then writes what is still buffered (for a few seconds at most) and returns nil.
func (p *Pager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { p.writeLoop(ctx) })
	wg.Go(func() { p.sendLoop(ctx) })
	if len(p.debtors) > 0 {
		wg.Go(func() { p.sweepLoop(ctx) })
	}
	wg.Wait()
	return nil
}

func (p *Pager) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
