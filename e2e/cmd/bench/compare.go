package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"
)

// figure is one headline figure of a run, for a comparison of two runs.
type figure struct {
	label string
	// value is the figure of r; ok is false when r does not have it.
	value func(r *Result) (v float64, ok bool)
	// lowerIsBetter marks latencies and costs.
	lowerIsBetter bool
	// ratio marks a figure that is a ratio: its change is shown as a difference.
	ratio bool
}

// figures lists the headline figures a comparison shows, for the modes of both runs.
func figures(modes []string) []figure {
	out := []figure{{label: "ceiling: producer tx/s", value: func(r *Result) (float64, bool) {
		return r.Ceiling.ProducerTxPerSec, r.Ceiling.ProducerTxPerSec > 0
	}}}
	for _, mode := range modes {
		sat := func(f func(s Saturation) float64) func(r *Result) (float64, bool) {
			return func(r *Result) (float64, bool) {
				m, ok := r.mode(mode)
				if !ok || m.Saturation == nil || m.Saturation.Events == 0 {
					return 0, false
				}
				return f(*m.Saturation), true
			}
		}
		out = append(out,
			figure{label: mode + ": end to end events/s", value: sat(func(s Saturation) float64 { return s.EndToEndPerSec })},
			figure{label: mode + ": ÷ producer ceiling", ratio: true, value: func(r *Result) (float64, bool) {
				v := r.modeRatio(mode)
				return v, v > 0
			}},
			figure{label: mode + ": CPU ms per event (total)", lowerIsBetter: true,
				value: sat(func(s Saturation) float64 { return s.CPU.Total })})
		for i, f := range []float64{0.5, 0.8} {
			idx := i + 1 // Latency holds 25 %, 50 % and 80 %
			out = append(out, figure{label: fmt.Sprintf("%s: pay→shipment p99 ms at %.0f %%", mode, f*100), lowerIsBetter: true,
				value: func(r *Result) (float64, bool) {
					m, ok := r.mode(mode)
					if !ok || len(m.Latency) <= idx {
						return 0, false
					}
					return m.Latency[idx].PayToShipment.P99, true
				}})
		}
		out = append(out, figure{label: mode + ": backlog drain events/s", value: func(r *Result) (float64, bool) {
			m, ok := r.mode(mode)
			if !ok || m.Outage == nil || m.Outage.Events == 0 {
				return 0, false
			}
			return m.Outage.EventsPerSec, true
		}})
	}
	return out
}

// compareRuns prints a Markdown table of the headline figures of old and new with
// the change of each, marking a change for the worse beyond 5 % (or 0.05 of a ratio)
// as a regression.
func compareRuns(w io.Writer, old, new *Result) {
	fmt.Fprintf(w, "### compared with %s (commit %s)\n\n", old.Started.UTC().Format("2006-01-02 15:04 MST"), cmp.Or(old.Commit, "unknown"))
	if old.Short != new.Short {
		fmt.Fprintln(w, "(one run is short, the other full: their figures are not alike)")
	}
	fmt.Fprintln(w, "| measure | before | now | change |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	var modes []string
	for _, m := range new.Modes {
		if _, ok := old.mode(m.Mode); ok {
			modes = append(modes, m.Mode)
		}
	}
	for _, f := range figures(modes) {
		a, okA := f.value(old)
		b, okB := f.value(new)
		if !okA || !okB {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.label, show(a, f.ratio), show(b, f.ratio), change(a, b, f))
	}
	fmt.Fprintln(w)
}

func show(v float64, ratio bool) string {
	if ratio {
		return fmt.Sprintf("%.2f", v)
	}
	return num(v)
}

// change is the difference of b from a: absolute for a ratio, else relative, with
// "regression" when it is worse by more than the noise a quiet machine shows.
func change(a, b float64, f figure) string {
	var d, worse float64
	var s string
	if f.ratio {
		d = b - a
		s = fmt.Sprintf("%+.2f", d)
		worse = -d / 0.05
	} else {
		if a == 0 {
			return "—"
		}
		d = (b - a) / a
		s = fmt.Sprintf("%+.0f %%", d*100)
		worse = -d / 0.05
	}
	if f.lowerIsBetter {
		worse = -worse
	}
	if worse > 1 && !math.IsInf(worse, 0) {
		s += " **regression**"
	}
	return s
}

// readResult reads a run's JSON.
func readResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// compareFiles is `bench -compare OLD NEW`.
func compareFiles(w io.Writer, oldPath, newPath string) error {
	old, err := readResult(oldPath)
	if err != nil {
		return err
	}
	cur, err := readResult(newPath)
	if err != nil {
		return err
	}
	compareRuns(w, old, cur)
	return nil
}

// commitOf names the commit the working directory's repository is at, with "+dirty"
// when its work tree has changes; "" without git.
func commitOf(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += "+dirty"
	}
	return commit
}
