package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"handoff/e2e/cmd/bench/baseline"
	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/webhook"
)

// riverSetting is one River client configuration the River phase measures.
type riverSetting struct {
	MaxWorkers int `json:"max_workers"`
	// FetchCooldown is River's FetchCooldown; 0 leaves River's default.
	FetchCooldown time.Duration `json:"fetch_cooldown_ns"`
}

// RiverRun is the River baseline's drain of the seeded events with one setting: what
// e2e/riverbaseline printed, or why it failed, and its CPU per event, measured as a
// handoff drain's is: the baseline's process in finance's place, logistics, and the
// backends of both databases.
type RiverRun struct {
	baseline.Result
	CPU   CPU    `json:"cpu"`
	Error string `json:"error,omitempty"`
}

// riverDir is the River baseline's module, found from this file's location.
func riverDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "riverbaseline")
}

// startRiverBuild starts building the River baseline into the absolute directory dir,
// when cfg measures it, beside the services' build. It returns where the binary goes
// ("" when nothing is built) and a wait for the build's end.
func startRiverBuild(ctx context.Context, cfg config, dir string) (string, func() error) {
	if !cfg.phases["river"] || len(cfg.plan.River) == 0 {
		return "", func() error { return nil }
	}
	out := filepath.Join(dir, "riverbaseline")
	done := make(chan error, 1)
	go func() { done <- buildRiver(ctx, out) }()
	return out, func() error { return <-done }
}

// buildRiver builds the River baseline into the file out. It is a module outside
// go.work, so it is built with GOWORK=off.
func buildRiver(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = riverDir()
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the River baseline: %v\n%s", err, b)
	}
	return nil
}

// measureRiver drains p.Scaling seeded events with the River baseline once per
// setting of the plan, each on a fresh River database and a fresh logistics with its
// own database, so no key meets one of handoff's runs. A failed setting is recorded
// and the next one still runs.
func measureRiver(ctx context.Context, cl *cluster, bin, riverBin string, cfg config, progress logf) []RiverRun {
	var runs []RiverRun
	for i, s := range cfg.plan.River {
		progress("river: %d seeded events, MaxWorkers %d, FetchCooldown %s", cfg.plan.Scaling, s.MaxWorkers, cooldownName(s.FetchCooldown))
		r, err := riverRun(ctx, cl, bin, riverBin, fmt.Sprintf("river%d", i+1), s, cfg)
		if err != nil {
			r = RiverRun{Result: baseline.Result{MaxWorkers: s.MaxWorkers, FetchCooldown: cooldownName(s.FetchCooldown)}, Error: err.Error()}
			progress("river: %v", err)
		} else {
			progress("river: %s events/s (%.1f s)", num(r.EventsPerSec), r.SecondsToEmpty)
		}
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	return runs
}

func riverRun(ctx context.Context, cl *cluster, bin, riverBin, label string, s riverSetting, cfg config) (RiverRun, error) {
	var r RiverRun
	common := serviceVars(cfg.vars)
	logistics, ldbURL, err := startLogistics(ctx, cl, bin, label+"_logistics", common)
	if logistics != nil {
		defer func() { _ = logistics.Signal(syscall.SIGTERM) }()
	}
	if err != nil {
		return r, err
	}
	riverURL, err := cl.create(ctx, label)
	if err != nil {
		return r, err
	}
	if cfg.autovacuum > 0 {
		stop, err := autovacuumEvery(ctx, cfg.autovacuum, riverURL, ldbURL)
		if err != nil {
			return r, err
		}
		defer stop()
	}
	ldb, err := openPool(ctx, ldbURL, 1)
	if err != nil {
		return r, err
	}
	defer ldb.Close()
	cpu0 := logisticsTimes(ctx, bin, ldb)
	cmd := exec.CommandContext(ctx, riverBin, "-database", riverURL, "-webhook", logistics.URL+"/webhooks/finance",
		"-events", strconv.Itoa(cfg.plan.Scaling), "-max-workers", strconv.Itoa(s.MaxWorkers),
		"-fetch-cooldown", s.FetchCooldown.String(), "-timeout", cfg.plan.DrainTimeout.String())
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+webhook.FormatSecret(harness.SecretKey))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("the River baseline: %v: %s\n--- logistics log ---\n%s", err, tail(stderr.String()), logTail(logistics))
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return r, fmt.Errorf("the River baseline's output: %w", err)
	}
	r.CPU = riverCPU(cpu0.perEvent(logisticsTimes(ctx, bin, ldb), r.Events), r.Result)
	return r, checkShipped(ctx, ldb, r.Events)
}

// riverCPU adds the baseline's own times to logistics', per event: its process takes
// finance's place, its database's backends join logistics' as PostgreSQL.
func riverCPU(logistics CPU, r baseline.Result) CPU {
	if r.Events == 0 {
		return CPU{}
	}
	c := logistics
	c.Finance = r.RiverCPUMs / float64(r.Events)
	c.PostgreSQL += r.PostgresCPUMs / float64(r.Events)
	c.Total = c.Finance + c.Logistics + c.PostgreSQL
	return c
}

// logisticsTimes is the processor time so far of the logistics processes and of the
// backends of ldb's database (no finance runs beside the River baseline).
func logisticsTimes(ctx context.Context, bin string, ldb *pgxpool.Pool) cpuSnapshot {
	return cpuSnapshot{logistics: processesOf(filepath.Join(bin, "logistics")), postgres: baseline.BackendTimes(ctx, ldb)}
}

// checkShipped makes sure logistics processed each event once: the baseline counts
// the jobs River completed, logistics the events it took in.
func checkShipped(ctx context.Context, db *pgxpool.Pool, events int64) error {
	var n int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM logistics_processed_events`).Scan(&n); err != nil {
		return fmt.Errorf("count logistics' processed events: %w", err)
	}
	if n != events {
		return fmt.Errorf("the River baseline completed %d jobs but logistics processed %d events", events, n)
	}
	return nil
}

// cooldownName names a FetchCooldown setting as the table prints it.
func cooldownName(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return d.String()
}

func tail(s string) string {
	const n = 2000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// riverRows are the River baseline's drains, beside the scaling rows that drain the
// same seeded events with handoff: one row per setting, the fastest marked. A short
// run whose plan has no River setting says so in one row.
func riverRows(r *Result, ofProd func(float64) float64) []row {
	if len(r.River) == 0 {
		if !r.Short || len(r.Plan.River) > 0 {
			return nil
		}
		return []row{{"4", "River baseline (1 client) on the same seeded events: events/s (seconds)",
			func(ModeResult) string { return "not measured in -short" }, nil}}
	}
	best := -1
	for i, run := range r.River {
		if run.Error == "" && (best < 0 || run.EventsPerSec > r.River[best].EventsPerSec) {
			best = i
		}
	}
	var out []row
	for i, run := range r.River {
		label := fmt.Sprintf("River %s, 1 client, MaxWorkers %d, FetchCooldown %s: %s seeded events drained, events/s (seconds)",
			run.River, run.MaxWorkers, run.FetchCooldown, num(float64(r.Plan.Scaling)))
		if run.River == "" {
			label = fmt.Sprintf("River, 1 client, MaxWorkers %d, FetchCooldown %s", run.MaxWorkers, run.FetchCooldown)
		}
		if i == best && len(r.River) > 1 {
			label += ", **best of the sweep**"
		}
		value := fmt.Sprintf("%s (%.1f s)", num(run.EventsPerSec), run.SecondsToEmpty)
		if c := run.CPU; c.Total > 0 {
			value += fmt.Sprintf("; CPU ms/event River + logistics + PostgreSQL %.2f + %.2f + %.2f = %.2f",
				c.Finance, c.Logistics, c.PostgreSQL, c.Total)
		}
		if run.Snoozed > 0 || run.Errored > 0 {
			value += fmt.Sprintf(", %d snoozed on 409, %d retried", run.Snoozed, run.Errored)
		}
		ratio := func(ModeResult) float64 { return ofProd(run.EventsPerSec) }
		if run.Error != "" {
			value, ratio = "failed: "+strings.SplitN(run.Error, "\n", 2)[0], nil
		}
		out = append(out, row{"4", label, func(ModeResult) string { return value }, ratio})
	}
	return out
}
