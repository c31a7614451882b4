package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"handoff/e2e/cmd/bench/baseline"
	"handoff/e2e/cmd/bench/seed"
)

// drain migrates River's tables, starts one client, inserts the seeded events as jobs
// in one transaction and times them from its commit to the last completion.
func drain(ctx context.Context, cfg config) (baseline.Result, error) {
	res := baseline.Result{River: riverVersion(), MaxWorkers: cfg.maxWorkers, DBConns: cfg.dbConns}
	res.FetchCooldown = cfg.fetchCooldown.String()
	if cfg.fetchCooldown == 0 {
		res.FetchCooldown = river.FetchCooldownDefault.String() + " (default)"
	}
	pcfg, err := pgxpool.ParseConfig(cfg.database)
	if err != nil {
		return res, fmt.Errorf("parse -database: %w", err)
	}
	pcfg.MaxConns = int32(cfg.dbConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return res, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return res, fmt.Errorf("migrate River: %w", err)
	}
	worker := newDeliverWorker(cfg.webhook, cfg.secrets, cfg.maxWorkers)
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[warmupArgs]) error { return nil }))
	client, err := river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.maxWorkers}},
		FetchCooldown: cfg.fetchCooldown,
		Workers:       workers,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return res, err
	}
	if err := client.Start(ctx); err != nil {
		return res, fmt.Errorf("start River: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	if err := warmUp(ctx, client); err != nil {
		return res, err
	}
	// Room for every completion and a failure of each: an event that would not fit
	// the channel is dropped, and the wait would never end.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: 2*cfg.events + 1000,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled}})
	defer unsubscribe()
	self0, pg0 := baseline.SelfTime(), baseline.BackendTimes(ctx, pool)
	released, total, err := insertEvents(ctx, pool, client, cfg.events)
	if err != nil {
		return res, err
	}
	if err := waitCompleted(ctx, events, total); err != nil {
		return res, err
	}
	res.RiverCPUMs = float64(baseline.SelfTime()-self0) / float64(time.Millisecond)
	res.PostgresCPUMs = float64(baseline.Spent(pg0, baseline.BackendTimes(ctx, pool))) / float64(time.Millisecond)
	res.Snoozed = worker.snoozed.Load()
	return res, stats(ctx, pool, &res, released)
}

// warmupArgs is a job that does nothing: its completion shows the client fetches.
type warmupArgs struct{}

func (warmupArgs) Kind() string { return "warmup" }

// warmUp waits until a first job has run, so the drain does not time the client's
// start.
func warmUp(ctx context.Context, client *river.Client[pgx.Tx]) error {
	done, cancel := client.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	if _, err := client.Insert(ctx, warmupArgs{}, nil); err != nil {
		return fmt.Errorf("insert the warm-up job: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("warm-up: %w", ctx.Err())
	}
}

// insertEvents inserts the seeded events as jobs in one transaction, every
// invoice.issued at priority 1 and every invoice.paid at 2, so River fetches each
// invoice's first event before its second as handoff's claim does. It returns the
// database's clock just before the commit and how many jobs it inserted.
func insertEvents(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], events int) (time.Time, int, error) {
	var released time.Time
	rows, err := pool.Query(ctx, `SELECT id::text, event_type, payload, idempotency_key, aggregate_seq, created_at
		FROM (`+seed.Events+`) AS s`, seed.Invoices(events), "pending")
	if err != nil {
		return released, 0, fmt.Errorf("seed: %w", err)
	}
	var params []river.InsertManyParams
	for rows.Next() {
		var a eventArgs
		if err := rows.Scan(&a.ID, &a.Type, &a.Data, &a.Key, &a.Sequence, &a.OccurredAt); err != nil {
			rows.Close()
			return released, 0, fmt.Errorf("seed: %w", err)
		}
		params = append(params, river.InsertManyParams{Args: a, InsertOpts: &river.InsertOpts{Priority: int(a.Sequence)}})
	}
	if err := rows.Err(); err != nil {
		return released, 0, fmt.Errorf("seed: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return released, 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
		return released, 0, fmt.Errorf("insert %d jobs: %w", len(params), err)
	}
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&released); err != nil {
		return released, 0, err
	}
	return released, len(params), tx.Commit(ctx)
}

// waitCompleted counts the client's completions of event jobs until total are
// completed, and fails at once when one is discarded or cancelled. It asks the
// client, not the database: a poll of river_job would add its own load to the
// PostgreSQL time the drain is charged with.
func waitCompleted(ctx context.Context, events <-chan *river.Event, total int) error {
	completed := 0
	for completed < total {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs completed: %w", completed, total, ctx.Err())
		case ev, ok := <-events:
			switch {
			case !ok:
				return fmt.Errorf("%d of %d jobs completed: the subscription ended", completed, total)
			case ev.Job.Kind != eventKind:
			case ev.Kind == river.EventKindJobCompleted:
				completed++
			case ev.Job.State == rivertype.JobStateDiscarded || ev.Job.State == rivertype.JobStateCancelled:
				return fmt.Errorf("job %d %s", ev.Job.ID, ev.Job.State)
			}
		}
	}
	return nil
}

// stats fills res from the completed event jobs.
func stats(ctx context.Context, pool *pgxpool.Pool, res *baseline.Result, released time.Time) error {
	var first, last *time.Time
	err := pool.QueryRow(ctx, `SELECT count(*), min(attempted_at), max(finalized_at),
			count(*) FILTER (WHERE cardinality(errors) > 0)
		FROM river_job WHERE kind = $1 AND state = 'completed'`, eventKind).
		Scan(&res.Events, &first, &last, &res.Errored)
	if err != nil {
		return fmt.Errorf("drain statistics: %w", err)
	}
	if first == nil || last == nil {
		return errors.New("drain: no job completed")
	}
	empty := last.Sub(released)
	res.SecondsToEmpty = empty.Seconds()
	res.EventsPerSec = float64(res.Events) / empty.Seconds()
	res.FirstStartMs = float64(first.Sub(released).Microseconds()) / 1000
	return nil
}

// riverVersion is the River module's version in this binary's build information.
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/riverqueue/river" {
				return m.Version
			}
		}
	}
	return "unknown"
}
