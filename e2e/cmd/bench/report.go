package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"handoff/pkg/integrationkit/delivery"
)

// Result is everything one run measured; it is written as JSON and as a table.
type Result struct {
	Started time.Time `json:"started"`
	Short   bool      `json:"short"`
	Command string    `json:"command"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	Clerks  int       `json:"clerks"`
	// Autovacuum is how often the benchmark looked for tables autovacuum would vacuum
	// or analyze, and did it, in place of a server whose autovacuum is off ("0s":
	// never).
	Autovacuum string `json:"autovacuum"`
	// Vars are environment variables -set gave every service process.
	Vars    map[string]string `json:"vars,omitempty"`
	Plan    plan              `json:"plan"`
	Ceiling Ceiling           `json:"ceiling"`
	Claim   Claim             `json:"claim"`
	Modes   []ModeResult      `json:"modes"`
	// River is the River baseline's drains of the scaling phase's seeded events, one
	// per setting of the plan's sweep.
	River []RiverRun `json:"river,omitempty"`
	// Commit is the repository's commit the binaries were built from, "+dirty" when
	// the work tree had changes.
	Commit string `json:"commit,omitempty"`
	// CeilingRatio is the default mode's (DefaultMode) end-to-end events/s over the
	// ceiling's producer transactions/s; 0 when that mode did not run.
	CeilingRatio float64 `json:"ceiling_ratio"`
}

// DefaultMode is the delivery mode finance runs in when DISPATCH_MODE is not set: the
// one the headline ratio measures.
const DefaultMode = "batch"

// ModeResult is every end-to-end figure of one delivery mode.
type ModeResult struct {
	Mode string `json:"mode"`
	// Unavailable says why the mode could not run at all.
	Unavailable string       `json:"unavailable,omitempty"`
	Error       string       `json:"error,omitempty"`
	Saturation  *Saturation  `json:"saturation,omitempty"`
	Latency     []Latency    `json:"latency,omitempty"`
	Outage      *Drain       `json:"outage,omitempty"`
	Scaling     []Drain      `json:"scaling,omitempty"`
	History     *Drain       `json:"history,omitempty"`
	Outbox      OutboxCounts `json:"outbox"`
	// LogErrors counts the services' ERROR lines by message.
	LogErrors LogErrors `json:"log_errors,omitempty"`
}

// ok reports whether the mode ran.
func (m ModeResult) ok() bool { return m.Unavailable == "" }

// ceilingRatio is the end-to-end rate of the default mode over the producer ceiling;
// 0 when that mode did not run.
func (r *Result) ceilingRatio() float64 {
	return r.modeRatio(DefaultMode)
}

// modeRatio is mode's end-to-end events/s over the producer ceiling; 0 when the mode
// did not run or no ceiling was measured.
func (r *Result) modeRatio(mode string) float64 {
	m, ok := r.mode(mode)
	if !ok || m.Saturation == nil || r.Ceiling.ProducerTxPerSec == 0 {
		return 0
	}
	return m.Saturation.EndToEndPerSec / r.Ceiling.ProducerTxPerSec
}

// mode returns the result of the mode named, if it ran.
func (r *Result) mode(name string) (ModeResult, bool) {
	for _, m := range r.Modes {
		if m.Mode == name && m.ok() {
			return m, true
		}
	}
	return ModeResult{}, false
}

// writeJSON writes r to path, creating its directory.
func writeJSON(path string, r *Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// row is one line of the table: a value per mode and, where it means something,
// its ratio to the ceiling.
type row struct {
	num   string
	label string
	value func(m ModeResult) string
	ratio func(m ModeResult) float64 // NaN: no ratio
}

// writeTable prints the machine and the table in Markdown.
func writeTable(w io.Writer, r *Result) {
	kind := "full"
	if r.Short {
		kind = "short"
	}
	fmt.Fprintf(w, "### handoff benchmark (%s), %s, `%s`, commit %s\n\n", kind, r.Started.UTC().Format("2006-01-02 15:04 MST"),
		r.Command, cmp.Or(r.Commit, "unknown"))
	fmt.Fprintf(w, "Machine: %s, %d cores, %.1f GiB RAM, load average %s at start; PostgreSQL %s (%s).\n",
		r.Machine.CPU, r.Machine.Cores, r.Machine.MemoryGiB, r.Machine.LoadAverage, r.Machine.PostgreSQL, settings(r.Machine.Settings))
	fmt.Fprintf(w, "Load: %d clerks (closed loop). Services at their defaults (DISPATCH_BATCH=%d; DISPATCH_CONCURRENCY=%d in single mode, %d in batch mode) "+
		"but LOG_LEVEL=warn, DISPATCH_BACKOFF=1s,2s,4s, BREAKER_COOLDOWN=1s; %s. Run took %.0f s.\n",
		r.Clerks, delivery.DefaultBatch, delivery.SingleConcurrency, delivery.BatchConcurrency, varsNote(r.Vars), r.Seconds)
	if r.Autovacuum != "0s" && r.Autovacuum != "" {
		fmt.Fprintf(w, "The server runs with autovacuum off: every %s the benchmark vacuums and analyzes each table of the databases measured that autovacuum would, by autovacuum's rules and settings and at its pace (cost-based delay), never in the claim rows' databases.\n", r.Autovacuum)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| # | measure |")
	for _, m := range r.Modes {
		fmt.Fprintf(w, " %s | ÷ ceiling |", m.Mode)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range r.Modes {
		fmt.Fprint(w, "---:|---:|")
	}
	fmt.Fprintln(w)
	for _, rw := range rows(r) {
		fmt.Fprintf(w, "| %s | %s |", rw.num, rw.label)
		for _, m := range r.Modes {
			v, q := cell(m, rw)
			fmt.Fprintf(w, " %s | %s |", v, q)
		}
		fmt.Fprintln(w)
	}
	for _, m := range r.Modes {
		if m.Error != "" {
			fmt.Fprintf(w, "\n%s failed: %s\n", m.Mode, strings.SplitN(m.Error, "\n", 2)[0])
		}
		if len(m.LogErrors) > 0 {
			fmt.Fprintf(w, "\n%s: ERROR log lines: %s\n", m.Mode, m.LogErrors)
		}
	}
	fmt.Fprintln(w)
}

func varsNote(vars map[string]string) string {
	if len(vars) == 0 {
		return "nothing else set"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		parts = append(parts, k+"="+vars[k])
	}
	return "set: " + strings.Join(parts, ", ")
}

func cell(m ModeResult, rw row) (string, string) {
	if !m.ok() {
		return "n/a (" + m.Unavailable + ")", "—"
	}
	v := rw.value(m)
	if v == "" {
		return "not measured", "—"
	}
	q := "—"
	if rw.ratio != nil {
		if f := rw.ratio(m); !math.IsNaN(f) {
			q = fmt.Sprintf("%.2f", f)
		}
	}
	return v, q
}

func settings(ss []Setting) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, ", ")
}

// rows lists the table's measures in order, after the ceiling they are measured against.
func rows(r *Result) []row {
	prod := r.Ceiling.ProducerTxPerSec
	ofProd := func(v float64) float64 {
		if prod == 0 {
			return math.NaN()
		}
		return v / prod
	}
	out := ceilingRows(r, ofProd)
	out = append(out, saturationRows(ofProd, r.Ceiling.ProducerCPU.Total)...)
	out = append(out, latencyRows()...)
	out = append(out, outageRows(r, ofProd)...)
	out = append(out, scalingRows(r, ofProd)...)
	out = append(out, riverRows(r, ofProd)...)
	out = append(out, claimRows(r, ofProd)...)
	return append(out, row{"–", "outbox at the end: delivered / pending / failed", func(m ModeResult) string {
		return fmt.Sprintf("%s / %d / %d", num(float64(m.Outbox.Delivered)), m.Outbox.Pending, m.Outbox.Failed)
	}, nil})
}

func ceilingRows(r *Result, ofProd func(float64) float64) []row {
	c := r.Ceiling
	same := func(v string) func(ModeResult) string { return func(ModeResult) string { return v } }
	out := []row{
		{"6", fmt.Sprintf("**ceiling: producer tx/s** (issue or pay + outbox + NOTIFY, pgx, no HTTP), best at %d workers, of the sweep and a recheck after the end-to-end runs (%s)", c.Workers, num(c.Recheck)),
			same(num(c.ProducerTxPerSec)), func(ModeResult) float64 { return ofProd(c.ProducerTxPerSec) }},
		{"6", "ceiling: consumer tx/s (processed event + shipment + history, pgx), best",
			same(num(c.ConsumerTxPerSec)), func(ModeResult) float64 { return ofProd(c.ConsumerTxPerSec) }},
		{"6", "ceiling: CPU ms per producer tx at the best count, pgx client + PostgreSQL",
			same(fmt.Sprintf("%.2f + %.2f", c.ProducerCPU.Finance, c.ProducerCPU.PostgreSQL)), nil},
	}
	for _, pt := range c.Sweep {
		out = append(out, row{"6", fmt.Sprintf("ceiling at %d workers: producer / consumer tx/s", pt.Workers),
			same(num(pt.ProducerTxPerSec) + " / " + num(pt.ConsumerTxPerSec)),
			func(ModeResult) float64 { return ofProd(pt.ProducerTxPerSec) }})
	}
	return out
}

func saturationRows(ofProd func(float64) float64, cpuTx float64) []row {
	sat := func(f func(s Saturation) float64) func(m ModeResult) string {
		return func(m ModeResult) string {
			if m.Saturation == nil || m.Saturation.Events == 0 {
				return ""
			}
			return num(f(*m.Saturation))
		}
	}
	ratio := func(f func(s Saturation) float64, scale float64) func(m ModeResult) float64 {
		return func(m ModeResult) float64 {
			if m.Saturation == nil {
				return math.NaN()
			}
			return ofProd(f(*m.Saturation) * scale)
		}
	}
	pay := func(s Saturation) float64 { return s.PaymentsPerSec }
	prod := func(s Saturation) float64 { return s.ProducedPerSec }
	during := func(s Saturation) float64 { return s.DeliveredDuringLoadPerSec }
	e2e := func(s Saturation) float64 { return s.EndToEndPerSec }
	return []row{
		{"1", "payments accepted/s, closed-loop clerks (÷ the ceiling's pay tx/s, half its producer tx/s)", sat(pay), ratio(pay, 2)},
		{"1", "events produced/s (issued + paid commits)", sat(prod), ratio(prod, 1)},
		{"1", "events delivered/s while the clerks run", sat(during), ratio(during, 1)},
		{"1", "**events delivered end to end/s** (first commit → last delivery of the run)", sat(e2e), ratio(e2e, 1)},
		{"1", "events per delivery request (mean)", func(m ModeResult) string {
			if m.Saturation == nil || m.Saturation.EventsPerRequest == 0 {
				return ""
			}
			return fmt.Sprintf("%.1f", m.Saturation.EventsPerRequest)
		}, nil},
		{"1", "CPU ms per event, finance + logistics + PostgreSQL = total (÷: the ceiling's producer tx CPU over it)",
			func(m ModeResult) string {
				if m.Saturation == nil || m.Saturation.CPU.Total == 0 {
					return ""
				}
				c := m.Saturation.CPU
				return fmt.Sprintf("%.2f + %.2f + %.2f = %.2f", c.Finance, c.Logistics, c.PostgreSQL, c.Total)
			},
			func(m ModeResult) float64 {
				if m.Saturation == nil || m.Saturation.CPU.Total == 0 || cpuTx == 0 {
					return math.NaN()
				}
				return cpuTx / m.Saturation.CPU.Total
			}},
	}
}

func latencyRows() []row {
	var out []row
	for i, f := range []float64{0.25, 0.5, 0.8} {
		out = append(out, row{"2", fmt.Sprintf("pay→shipment p50 / p95 / p99 ms, open loop at %.0f %% of saturation (invoices/s offered)", f*100),
			func(m ModeResult) string {
				if len(m.Latency) <= i {
					return ""
				}
				l := m.Latency[i]
				d := l.PayToShipment
				s := fmt.Sprintf("%.1f / %.1f / %.1f (%s/s)", d.P50, d.P95, d.P99, num(l.OfferedPerSec))
				if l.Shed > 0 || l.Missing > 0 {
					s += fmt.Sprintf(", %d shed, %d missing", l.Shed, l.Missing)
				}
				return s
			}, nil})
		out = append(out, row{"2", fmt.Sprintf("… of which queued before its request p50 / p99 ms, the request p50 / p99 ms, events per request; share held behind its invoice's issued event, at %.0f %%", f*100),
			func(m ModeResult) string {
				if len(m.Latency) <= i || m.Latency[i].Split.Queued.N == 0 {
					return ""
				}
				s := m.Latency[i].Split
				return fmt.Sprintf("%.1f / %.1f, %.1f / %.1f, %.1f; %.0f %%", s.Queued.P50, s.Queued.P99,
					s.Request.P50, s.Request.P99, s.PerRequest, 100*s.BehindIssued)
			}, nil})
	}
	return out
}

func outageRows(r *Result, ofProd func(float64) float64) []row {
	out := func(f func(d Drain) string) func(m ModeResult) string {
		return func(m ModeResult) string {
			if m.Outage == nil || m.Outage.Events == 0 {
				return ""
			}
			return f(*m.Outage)
		}
	}
	ratio := func(f func(d Drain) float64) func(m ModeResult) float64 {
		return func(m ModeResult) float64 {
			if m.Outage == nil {
				return math.NaN()
			}
			return ofProd(f(*m.Outage))
		}
	}
	return []row{
		{"3", "payments accepted/s with logistics down (÷ pay ceiling)",
			out(func(d Drain) string { return num(d.AcceptedPerSec) }), ratio(func(d Drain) float64 { return 2 * d.AcceptedPerSec })},
		{"3", fmt.Sprintf("backlog of %s events after the outage: drained events/s, logistics up → empty", num(float64(r.Plan.Backlog))),
			out(func(d Drain) string { return num(d.EventsPerSec) }), ratio(func(d Drain) float64 { return d.EventsPerSec })},
		{"3", "backlog: seconds to empty after logistics is up (circuit probe included)",
			out(func(d Drain) string { return fmt.Sprintf("%.1f s", d.SecondsToEmpty) }), nil},
		{"3", "backlog: events/s from first to last delivery",
			out(func(d Drain) string { return num(d.DeliveryPerSec) }), ratio(func(d Drain) float64 { return d.DeliveryPerSec })},
	}
}

func scalingRows(r *Result, ofProd func(float64) float64) []row {
	var out []row
	for i, n := range r.Plan.Replicas {
		out = append(out, row{"4", fmt.Sprintf("%s seeded events drained by %d dispatcher replica(s) on the scaling phase's own databases, fresh at its first drain as River's are at each: events/s (seconds); CPU ms per event, finance + logistics + PostgreSQL = total", num(float64(r.Plan.Scaling)), n),
			func(m ModeResult) string {
				if len(m.Scaling) <= i {
					return ""
				}
				d := m.Scaling[i]
				s := fmt.Sprintf("%s (%.1f s)", num(d.EventsPerSec), d.SecondsToEmpty)
				if c := d.CPU; c.Total > 0 {
					s += fmt.Sprintf("; CPU ms/event %.2f + %.2f + %.2f = %.2f", c.Finance, c.Logistics, c.PostgreSQL, c.Total)
				}
				return s
			},
			func(m ModeResult) float64 {
				if len(m.Scaling) <= i {
					return math.NaN()
				}
				return ofProd(m.Scaling[i].EventsPerSec)
			}})
	}
	return out
}

func claimRows(r *Result, ofProd func(float64) float64) []row {
	var out []row
	for i, cr := range r.Claim.Rows {
		var state string
		switch {
		case cr.Delivered == 0 && cr.Pending == 0:
			state = "empty outbox"
		case cr.Delivered == 0:
			state = num(float64(cr.Pending)) + " pending"
		default:
			state = num(float64(cr.Delivered)) + " delivered + " + num(float64(cr.Pending)) + " pending"
		}
		switch cr.Statistics {
		case "idle":
			state += ", statistics taken while nothing was pending"
		case "none":
			state += ", never analyzed"
		}
		value := fmt.Sprintf("%.2f / %.2f (%d claimed)", cr.Latency.P50, cr.Latency.P99, cr.Claimed)
		if cr.Pending > 0 && i != 1 && len(r.Claim.Rows) > 1 && r.Claim.Rows[1].Latency.P50 > 0 {
			value += fmt.Sprintf(", ×%.2f the backlog alone", cr.Latency.P50/r.Claim.Rows[1].Latency.P50)
		}
		out = append(out, row{"5", fmt.Sprintf("claim of %d, p50 / p99 ms: %s", r.Claim.Batch, state),
			func(ModeResult) string { return value }, nil})
	}
	return append(out, row{"5", fmt.Sprintf("drain of %s seeded events over %s delivered rows (VACUUM ANALYZE while nothing was pending), 1 dispatcher: events/s (seconds)",
		num(float64(r.Plan.Pending)), num(float64(r.Plan.History))),
		func(m ModeResult) string {
			if m.History == nil || m.History.Events == 0 {
				return ""
			}
			return fmt.Sprintf("%s (%.1f s)", num(m.History.EventsPerSec), m.History.SecondsToEmpty)
		},
		func(m ModeResult) float64 {
			if m.History == nil {
				return math.NaN()
			}
			return ofProd(m.History.EventsPerSec)
		}})
}

// num prints a rate or count with thousands separators and no decimals, or one
// decimal below 100.
func num(f float64) string {
	if f < 100 {
		return fmt.Sprintf("%.1f", f)
	}
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
