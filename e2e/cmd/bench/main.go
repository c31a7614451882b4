// Command bench measures handoff on the real binaries and, in the same
// run, the ceiling PostgreSQL sets: the same producer and consumer transactions run
// straight from pgx with no HTTP. It prints a Markdown table naming the machine,
// writes the figures as JSON (with the commit), compares them with the previous run's
// JSON at the same path, and ends with one line "e2e/ceiling: 0.NN": the default
// delivery mode's (batch) end-to-end events/s over the ceiling's producer
// transactions/s. `bench -compare OLD.json NEW.json` compares two saved runs.
//
// Beside handoff's drains of seeded events it drains the same events with River
// (e2e/riverbaseline, a module outside go.work): one client per setting of a small
// sweep, posting to a logistics of its own, so each run repeats the comparison.
//
// It creates its own databases (handoff_bench_*) on the PostgreSQL at PG_ADMIN_URL
// (else TEST_DATABASE_URL, else the local default), starts both services on loopback
// ports, and drops the databases when done. Every phase is bounded in time.
//
//	cd e2e && go run ./cmd/bench [-short] [-out .out/bench.json]
//	cd e2e && go run ./cmd/bench -compare OLD.json NEW.json
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/pgtest"
)

func main() { command.Main("bench", run) }

// binDir is where the binaries measured are built. It is kept between runs, so an
// unchanged tree is not linked again.
var binDir = filepath.Join(".out", "bin")

// plan is how much each phase does; -short shrinks it to fit in 100 s, drains with one
// and four dispatchers only, and measures River with only the best setting of the sweep.
type plan struct {
	Ceiling    time.Duration `json:"ceiling_ns"`
	Saturation time.Duration `json:"saturation_ns"`
	Warmup     time.Duration `json:"warmup_ns"`
	Latency    time.Duration `json:"latency_ns"`
	Backlog    int           `json:"backlog"`
	Scaling    int           `json:"scaling"`
	// Replicas are the dispatcher counts the scaling phase drains Scaling events with.
	Replicas     []int         `json:"replicas"`
	History      int           `json:"history"`
	Pending      int           `json:"pending"`
	ClaimSamples int           `json:"claim_samples"`
	DrainTimeout time.Duration `json:"drain_timeout_ns"`
	// River is the River baseline's sweep: one drain of Scaling seeded events per
	// setting (none: the River phase is not measured).
	River []riverSetting `json:"river,omitempty"`
}

var (
	fullPlan = plan{Ceiling: 10 * time.Second, Saturation: 20 * time.Second, Warmup: 3 * time.Second,
		Latency: 15 * time.Second, Backlog: 50_000, Scaling: 20_000, Replicas: []int{1, 2, 4}, History: 1_000_000, Pending: 100_000,
		ClaimSamples: 1000, DrainTimeout: 15 * time.Minute,
		River: []riverSetting{{16, 0}, {16, 10 * time.Millisecond}, {100, 0}, {100, 10 * time.Millisecond}}}
	shortPlan = plan{Ceiling: time.Second, Saturation: 5 * time.Second, Warmup: time.Second,
		Latency: 2500 * time.Millisecond, Backlog: 1_000, Scaling: 1_500, Replicas: []int{1, 4}, History: 20_000, Pending: 1_000,
		ClaimSamples: 100, DrainTimeout: 90 * time.Second,
		River: []riverSetting{{100, 10 * time.Millisecond}}} // best of the sweep at 1,500 events, two cores
)

// config is the command line.
type config struct {
	short  bool
	out    string
	modes  []string
	phases map[string]bool
	clerks int
	vars   map[string]string
	// autovacuum is how often the autovacuum stand-in looks for tables autovacuum
	// would vacuum or analyze, when the server's autovacuum is off (0: never); naptime
	// says to take the server's autovacuum_naptime instead.
	autovacuum time.Duration
	naptime    bool
	logs       string
	admin      string
	plan       plan
	// compare, with files OLD and NEW, compares two runs instead of running one.
	compare bool
	files   []string
}

// phaseNames are the parts of a run that -phases selects; saturation always runs in
// a mode, since the latency runs are offered fractions of its rate.
var phaseNames = []string{"ceiling", "claim", "latency", "outage", "scaling", "history", "river"}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	var modes, phases string
	fs.BoolVar(&c.short, "short", false, "quick run (under 100 s): smaller backlogs, shorter phases, fewer drains")
	fs.StringVar(&c.out, "out", filepath.Join(".out", "bench.json"), "where the JSON goes (the table goes beside it as .md)")
	fs.StringVar(&modes, "modes", "single,batch", "delivery modes to measure end to end")
	fs.StringVar(&phases, "phases", strings.Join(phaseNames, ","), "phases to run besides each mode's saturation")
	fs.IntVar(&c.clerks, "clerks", 16, "closed-loop clerks, and the ceiling's workers")
	c.naptime = true
	fs.Func("autovacuum", "when the server runs with autovacuum off, look this often for tables of the databases measured that autovacuum would vacuum or analyze (by its rules and settings), and do it at autovacuum's pace: a duration, 0 (never), or naptime, the server's autovacuum_naptime, as often as autovacuum would look (default naptime)", func(v string) error {
		if c.naptime = v == "naptime"; c.naptime {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want naptime, 0 or a positive duration, got %q", v)
		}
		c.autovacuum = d
		return nil
	})
	fs.StringVar(&c.logs, "logs", "", "directory to write every service's log into (none when empty)")
	fs.BoolVar(&c.compare, "compare", false, "compare two runs' JSON instead of running: bench -compare OLD.json NEW.json")
	c.vars = map[string]string{}
	fs.Func("set", "KEY=VALUE: an environment variable of every service process (repeatable), e.g. DB_MAX_CONNS=8", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", kv)
		}
		c.vars[k] = v
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.compare {
		if fs.NArg() != 2 {
			return c, errors.New("-compare takes two JSON files: OLD NEW")
		}
		c.files = fs.Args()
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.modes = strings.Split(modes, ",")
	for _, m := range c.modes {
		if m != "single" && m != "batch" {
			return c, fmt.Errorf("-modes: unknown mode %q (single, batch)", m)
		}
	}
	c.phases = map[string]bool{}
	for _, ph := range strings.Split(phases, ",") {
		if ph == "" {
			continue
		}
		if !slices.Contains(phaseNames, ph) {
			return c, fmt.Errorf("-phases: unknown phase %q (%s)", ph, strings.Join(phaseNames, ", "))
		}
		c.phases[ph] = true
	}
	if c.clerks < 1 {
		return c, errors.New("-clerks must be at least 1")
	}
	c.admin = cmp.Or(os.Getenv("PG_ADMIN_URL"), pgtest.AdminURL())
	c.plan = fullPlan
	if c.short {
		c.plan = shortPlan
	}
	return c, nil
}

func run(ctx context.Context, args, _ []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	if cfg.compare {
		return compareFiles(stdout, cfg.files[0], cfg.files[1])
	}
	previous, _ := readResult(cfg.out) // the last run's, compared with at the end
	began := time.Now()
	progress := logf(func(format string, a ...any) {
		fmt.Fprintf(stderr, "bench %5.1fs  "+format+"\n", append([]any{time.Since(began).Seconds()}, a...)...)
	})
	res := &Result{Started: began, Short: cfg.short, Command: strings.TrimSpace("go run ./cmd/bench " + strings.Join(args, " ")),
		Clerks: cfg.clerks, Vars: cfg.vars, Plan: cfg.plan, Commit: commitOf(ctx)}
	if res.Machine, err = describeMachine(ctx, cfg.admin); err != nil {
		return err
	}
	switch {
	case res.Machine.setting("autovacuum") != "off":
		cfg.autovacuum = 0 // the server's own autovacuum keeps the tables
	case cfg.naptime:
		cfg.autovacuum = res.Machine.naptime
	}
	res.Autovacuum = cfg.autovacuum.String()
	if cfg.naptime && cfg.autovacuum > 0 {
		res.Autovacuum += " (the server's autovacuum_naptime)"
	}
	progress("building the binaries")
	bin, err := filepath.Abs(binDir) // the builds run in the modules' directories
	if err == nil {
		err = os.MkdirAll(bin, 0o755)
	}
	if err != nil {
		return err
	}
	baseline, riverBuilt := startRiverBuild(ctx, cfg, bin)
	err = harness.BuildInto(bin)
	if err := cmp.Or(err, riverBuilt()); err != nil {
		return err
	}
	cl := &cluster{admin: cfg.admin}
	defer func() {
		if err := cl.dropAll(); err != nil {
			progress("dropping the databases: %v", err)
		}
	}()
	if err := measureAll(ctx, cl, bin, baseline, cfg, res, progress); err != nil {
		return err
	}
	res.Seconds = time.Since(began).Seconds()
	res.CeilingRatio = res.ceilingRatio()
	if err := writeJSON(cfg.out, res); err != nil {
		return fmt.Errorf("write %s: %w", cfg.out, err)
	}
	if err := writeMarkdown(strings.TrimSuffix(cfg.out, filepath.Ext(cfg.out))+".md", res); err != nil {
		return err
	}
	writeTable(stdout, res)
	if previous != nil {
		compareRuns(stdout, previous, res)
	}
	_, err = fmt.Fprintf(stdout, "e2e/ceiling: %.2f\n", res.CeilingRatio)
	return err
}

// measureAll runs the ceiling, the claim latencies, every mode's end-to-end runs with
// the River baseline (when baseline, its binary, is set) beside single mode's drains,
// then the producer ceiling once more.
func measureAll(ctx context.Context, cl *cluster, bin, baseline string, cfg config, res *Result, progress logf) error {
	var rig *ceilingRig
	if cfg.phases["ceiling"] {
		workers := ceilingWorkers(cfg.clerks)
		progress("ceiling: producer and consumer transactions, %v workers, %s each", workers, cfg.plan.Ceiling)
		var err error
		if rig, err = newCeilingRig(ctx, cl, cfg.plan.Ceiling, slices.Max(workers)); err != nil {
			return err
		}
		defer rig.close()
		if res.Ceiling, err = rig.sweep(ctx, workers); err != nil {
			return err
		}
	}
	if cfg.phases["claim"] {
		progress("claim latency: empty, %d pending, %d delivered + pending", cfg.plan.Pending, cfg.plan.History)
		var err error
		if res.Claim, err = measureClaim(ctx, cl, cfg.plan, 100); err != nil {
			return err
		}
	}
	// River drains right after single mode's one-dispatcher drain, the row it is
	// compared with, so that both meet the machine in the same minutes (its speed
	// drifts within a run); at the end when single mode's drains do not run.
	river := func() { res.River = measureRiver(ctx, cl, bin, baseline, cfg, progress) }
	for _, mode := range cfg.modes {
		var beside func()
		if baseline != "" && res.River == nil && mode == delivery.ModeSingle {
			beside = river
		}
		res.Modes = append(res.Modes, runMode(ctx, cl, bin, mode, cfg, progress, beside))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if baseline != "" && res.River == nil {
		river()
	}
	if rig == nil {
		return nil
	}
	progress("ceiling: producer transactions again, %d workers", res.Ceiling.Workers)
	return rig.recheck(ctx, &res.Ceiling)
}

// runMode starts a pair of services delivering in mode and runs every end-to-end
// phase, and beside (when not nil) right after the one-dispatcher drain; what failed
// is recorded in the result, not returned, so the other mode still runs.
func runMode(ctx context.Context, cl *cluster, bin, mode string, cfg config, progress logf, beside func()) ModeResult {
	r := ModeResult{Mode: mode}
	progress("%s: starting logistics and finance on fresh databases", mode)
	e, err := startEnv(ctx, cl, bin, mode, mode, cfg.vars)
	switch {
	case errors.Is(err, errBatchUnavailable):
		r.Unavailable = errBatchUnavailable.Error()
		progress("%s: n/a (%s)", mode, r.Unavailable)
		return r
	case err != nil:
		r.Error = err.Error()
		return r
	}
	defer e.close()
	e.beside = beside
	e.autovacuum = cfg.autovacuum
	if err := e.startAutovacuum(ctx); err != nil {
		r.Error = err.Error()
		return r
	}
	err = e.measure(ctx, cfg, &r, progress)
	if c, cerr := e.counts(ctx); cerr == nil {
		r.Outbox = c
	}
	r.LogErrors = e.logErrors()
	if cfg.logs != "" {
		if err := e.saveLogs(cfg.logs); err != nil {
			progress("%s: saving the logs: %v", mode, err)
		}
	}
	switch {
	case errors.Is(err, errBatchUnavailable):
		r.Unavailable = errBatchUnavailable.Error()
	case err != nil:
		r.Error = fmt.Sprintf("%v\n--- finance log ---\n%s\n--- logistics log ---\n%s", err, logTail(e.finance), logTail(e.logistics))
		progress("%s: %v", mode, err)
	}
	return r
}

// measure runs the phases of one mode in order, filling r as it goes.
func (e *env) measure(ctx context.Context, cfg config, r *ModeResult, progress logf) error {
	p := cfg.plan
	progress("%s: saturation, %d clerks for %s", e.mode, cfg.clerks, p.Saturation)
	sat, err := e.saturation(ctx, p, cfg.clerks)
	r.Saturation = &sat
	if err != nil {
		return err
	}
	if c, err := e.counts(ctx); err == nil && c.NotFound > 0 {
		return errBatchUnavailable // dead-lettered on 404: the endpoint vanished
	}
	if cfg.phases["latency"] {
		perSec := min(sat.PaymentsPerSec, sat.EndToEndPerSec/2) // invoices/s the whole chain sustains
		for _, f := range []float64{0.25, 0.5, 0.8} {
			progress("%s: latency, open loop at %.0f%% (%.0f invoices/s) for %s", e.mode, f*100, f*perSec, p.Latency)
			l, err := e.latency(ctx, p, f, perSec)
			r.Latency = append(r.Latency, l)
			if err != nil {
				return err
			}
		}
	}
	return e.measureDrains(ctx, cfg, r, progress)
}

// measureDrains runs the backlog phases: the outage, the replica scaling and the
// drain over a long history.
func (e *env) measureDrains(ctx context.Context, cfg config, r *ModeResult, progress logf) error {
	p := cfg.plan
	if cfg.phases["outage"] {
		progress("%s: outage: logistics down while %d events accumulate", e.mode, p.Backlog)
		o, err := e.outage(ctx, p, cfg.clerks, progress)
		r.Outage = &o
		if err != nil {
			return err
		}
	}
	if cfg.phases["scaling"] {
		if err := e.scaling(ctx, cfg, r, progress); err != nil {
			return err
		}
	}
	if !cfg.phases["history"] {
		return nil
	}
	progress("%s: history: %d delivered rows, then %d pending drained", e.mode, p.History, p.Pending)
	h, err := e.history(ctx, p)
	r.History = &h
	return err
}

// writeMarkdown writes the table to path.
func writeMarkdown(path string, r *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	writeTable(f, r)
	return f.Close()
}

// logf reports progress.
type logf func(format string, args ...any)
