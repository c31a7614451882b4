package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// outage stops logistics, lets clerks pay until p.Backlog events wait, starts
// logistics again and times the drain.
func (e *env) outage(ctx context.Context, p plan, clerks int, progress logf) (Drain, error) {
	d := Drain{Replicas: 1}
	if err := e.logistics.Signal(syscall.SIGTERM); err != nil {
		return d, err
	}
	start, err := dbNow(ctx, e.fdb)
	if err != nil {
		return d, err
	}
	t := closedLoop(ctx, newAPI(e.finance.URL), clerks, int64(math.Ceil(float64(p.Backlog)/2)), time.Now().Add(p.DrainTimeout), "outage")
	if err := t.err(); err != nil {
		return d, fmt.Errorf("outage: %w", err)
	}
	end, err := dbNow(ctx, e.fdb)
	if err != nil {
		return d, err
	}
	d.AcceptedPerSec = rate(t.paid.Load(), end.Sub(start))
	progress("%s: %d events wait; logistics up again", e.mode, 2*t.paid.Load())
	if err := e.logistics.Run(readyWithin); err != nil {
		return d, err
	}
	up, err := dbNow(ctx, e.fdb)
	if err != nil {
		return d, err
	}
	if err := e.waitDrained(ctx, p.DrainTimeout); err != nil {
		return d, err
	}
	return d, e.drainStats(ctx, &d, up, start)
}

// scaling drains p.Scaling seeded events by each count of dispatchers in p.Replicas,
// on services and databases of their own, fresh as each River baseline run's are: the
// phases before leave the mode's databases with hundreds of thousands of rows, their
// dead tuples and the history finance's chart recounts, none of which River's drains
// meet. The mode's own services stop meanwhile, so that their processor time does not
// count in the drains, and start again after them. The drains' outbox counts join the
// mode's.
func (e *env) scaling(ctx context.Context, cfg config, r *ModeResult, progress logf) error {
	progress("%s: scaling: fresh databases; the mode's services stop meanwhile", e.mode)
	if err := e.stopServices(); err != nil {
		return err
	}
	f, err := startEnv(ctx, e.cl, e.bin, e.mode, e.label+"_drains", cfg.vars)
	if err != nil {
		return err
	}
	e.drains = f
	f.autovacuum, f.beside = e.autovacuum, e.beside
	err = f.drainByReplicas(ctx, cfg.plan, r, progress)
	if err != nil {
		err = fmt.Errorf("%w\n--- the drains' finance log ---\n%s\n--- the drains' logistics log ---\n%s", err, logTail(f.finance), logTail(f.logistics))
	}
	if c, cerr := f.counts(ctx); cerr == nil {
		e.drained = c
	}
	f.close()
	if err != nil {
		return err
	}
	return e.startServices(ctx)
}

// drainByReplicas runs the seeded drains of the scaling phase, and beside right after
// the first, with this pair's services stopped meanwhile (River's drains run on
// services of their own, and its CPU counts every logistics process).
func (e *env) drainByReplicas(ctx context.Context, p plan, r *ModeResult, progress logf) error {
	for _, n := range p.Replicas {
		progress("%s: scaling: %d events drained by %d dispatcher(s)", e.mode, p.Scaling, n)
		d, err := e.seededDrain(ctx, p, n, p.Scaling)
		r.Scaling = append(r.Scaling, d)
		if err != nil {
			return err
		}
		if n == 1 && e.beside != nil {
			if err := e.stopServices(); err != nil {
				return err
			}
			e.beside()
			if err := e.startServices(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopServices stops the pair's finance and logistics and its stand-in for
// autovacuum, so that nothing of it runs, or counts, beside another measurement.
func (e *env) stopServices() error {
	e.stopAutovacuum()
	return errors.Join(e.finance.Signal(syscall.SIGTERM), e.logistics.Signal(syscall.SIGTERM))
}

// startServices starts them again, logistics first as startEnv does.
func (e *env) startServices(ctx context.Context) error {
	if err := e.logistics.Run(readyWithin); err != nil {
		return err
	}
	if err := e.finance.Run(readyWithin); err != nil {
		return err
	}
	return e.startAutovacuum(ctx)
}

// seededDrain starts replicas-1 more dispatchers, seeds events pending rows and
// times their delivery by all of them. Both databases are vacuumed first, as
// autovacuum would have after the phases before (the server runs without it): each
// drain starts, as the River baseline's does on its fresh database, without the dead
// rows of the last one in the outbox's indexes; a table never written is left
// unanalyzed, as River's fresh ones are (vacuumWritten). The drain gets a stand-in for
// autovacuum of its own, started as it begins, as the River baseline's drains do, and
// stopped as it ends, so none runs beside the next drain.
func (e *env) seededDrain(ctx context.Context, p plan, replicas, events int) (Drain, error) {
	d := Drain{Replicas: replicas}
	defer func() { _ = e.stopReplicas() }()
	e.stopAutovacuum()
	defer e.stopAutovacuum()
	for _, db := range []*pgxpool.Pool{e.fdb, e.ldb} {
		if err := vacuumWritten(ctx, db); err != nil {
			return d, fmt.Errorf("vacuum before the drain: %w", err)
		}
	}
	if err := e.startAutovacuum(ctx); err != nil {
		return d, err
	}
	if err := e.startReplicas(replicas - 1); err != nil {
		return d, err
	}
	cpu0, err := e.cpu(ctx)
	if err != nil {
		return d, err
	}
	_, released, err := seedEvents(ctx, e.fdb, events, e.dest, "pending")
	if err != nil {
		return d, err
	}
	cpu1, err := e.cpuOnceDrained(ctx, p.DrainTimeout)
	if err != nil {
		return d, err
	}
	if err := e.drainStats(ctx, &d, released, time.Time{}); err != nil {
		return d, err
	}
	d.CPU = cpu0.perEvent(cpu1, d.Events)
	return d, nil
}

// history gives the outbox p.History delivered rows, vacuums it, and times the drain
// of p.Pending seeded events by one dispatcher.
func (e *env) history(ctx context.Context, p plan) (Drain, error) {
	if _, _, err := seedEvents(ctx, e.fdb, p.History, e.dest, "delivered"); err != nil {
		return Drain{}, err
	}
	if err := vacuumAnalyze(ctx, e.fdb); err != nil {
		return Drain{}, err
	}
	return e.seededDrain(ctx, p, 1, p.Pending)
}

// drainStats fills d from the events delivered since released (and, when createdFrom
// is set, created since then).
func (e *env) drainStats(ctx context.Context, d *Drain, released, createdFrom time.Time) error {
	var first, last *time.Time
	err := e.fdb.QueryRow(ctx, `SELECT count(*), min(delivered_at), max(delivered_at) FROM finance_outbox
		WHERE delivery_status = 'delivered' AND delivered_at >= $1 AND created_at >= $2`,
		released, createdFrom).Scan(&d.Events, &first, &last)
	if err != nil {
		return fmt.Errorf("drain statistics: %w", err)
	}
	if first == nil || last == nil {
		return fmt.Errorf("drain: nothing was delivered")
	}
	empty := last.Sub(released)
	d.SecondsToEmpty = empty.Seconds()
	d.EventsPerSec = rate(d.Events, empty)
	d.DeliveryPerSec = rate(d.Events, last.Sub(*first))
	return nil
}

// cpuOnceDrained waits up to within for the outbox to drain and then samples the CPU,
// so that the sample holds every delivery.
func (e *env) cpuOnceDrained(ctx context.Context, within time.Duration) (cpuSnapshot, error) {
	if err := e.waitDrained(ctx, within); err != nil {
		return cpuSnapshot{}, err
	}
	return e.cpu(ctx)
}

// anyPending says whether an event is pending. It reads the due index in its order,
// with sorts off as the claim does (see outbox.Store.Claim), whatever the statistics
// say. A plain EXISTS was planned as a scan of the table, which, as the heap's first
// pages filled with delivered rows, read the whole outbox at each poll: 9 ms of
// PostgreSQL time every 50 ms, charged to the drain it waits for.
func (e *env) anyPending(ctx context.Context) (bool, error) {
	var pending bool
	var b pgx.Batch
	b.Queue(`SELECT set_config('enable_sort', 'off', true)`)
	b.Queue(`SELECT count(*) > 0 FROM (SELECT 1 FROM finance_outbox
		WHERE delivery_status = 'pending' ORDER BY next_attempt_at LIMIT 1) AS p`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&pending) })
	return pending, e.fdb.SendBatch(ctx, &b).Close()
}

// waitDrained polls until no event is pending, for at most within.
func (e *env) waitDrained(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pending, err := e.anyPending(ctx)
		if err != nil {
			return fmt.Errorf("wait for the outbox to drain: %w", err)
		}
		if !pending {
			return nil
		}
		if time.Now().After(deadline) {
			var n int64
			_ = e.fdb.QueryRow(ctx, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'pending'`).Scan(&n)
			return fmt.Errorf("%d events still pending after %s", n, within)
		}
		pause(ctx, 50*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// OutboxCounts is the outbox by status at the end of a mode's runs (the scaling
// phase's outbox included).
type OutboxCounts struct {
	Delivered int64 `json:"delivered"`
	Pending   int64 `json:"pending"`
	Failed    int64 `json:"failed"`
	// NotFound counts dead letters whose last answer was 404.
	NotFound int64 `json:"failed_404"`
}

func (e *env) counts(ctx context.Context) (OutboxCounts, error) {
	var c OutboxCounts
	err := e.fdb.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE delivery_status = 'delivered'),
			count(*) FILTER (WHERE delivery_status = 'pending'),
			count(*) FILTER (WHERE delivery_status = 'failed'),
			count(*) FILTER (WHERE delivery_status = 'failed' AND last_status_code = 404)
		FROM finance_outbox`).Scan(&c.Delivered, &c.Pending, &c.Failed, &c.NotFound)
	if err != nil {
		return c, fmt.Errorf("outbox counts: %w", err)
	}
	d := e.drained
	c.Delivered, c.Pending, c.Failed, c.NotFound = c.Delivered+d.Delivered, c.Pending+d.Pending, c.Failed+d.Failed, c.NotFound+d.NotFound
	return c, nil
}
