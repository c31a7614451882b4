package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/cmd/bench/baseline"
)

func TestDistOfUsesNearestRank(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond // 100 ms … 1 ms, unsorted
	}
	d := distOf(ds)
	require.Equal(t, Dist{N: 100, P50: 50, P95: 95, P99: 99, Max: 100}, d)
	require.Equal(t, Dist{}, distOf(nil))
	require.Equal(t, Dist{N: 1, P50: 7, P95: 7, P99: 7, Max: 7}, distOf([]time.Duration{7 * time.Millisecond}))
}

func TestNumGroupsThousands(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0.0", 99.94: "99.9", 100: "100", 1234.4: "1,234", 1234567: "1,234,567"} {
		require.Equal(t, want, num(in), "%v", in)
	}
}

func TestCeilingWorkersAreSortedAndDistinct(t *testing.T) {
	t.Parallel()
	require.Equal(t, []int{4, 8, 16}, ceilingWorkers(16))
	require.Equal(t, []int{4, 8}, ceilingWorkers(8))
	require.Equal(t, []int{2, 4, 8}, ceilingWorkers(2))
}

func TestTableMarksAnUnavailableModeAndEndsEachRow(t *testing.T) {
	t.Parallel()
	r := &Result{
		Plan:    plan{Replicas: fullPlan.Replicas},
		Ceiling: Ceiling{Workers: 8, ProducerTxPerSec: 2000, ConsumerTxPerSec: 2500},
		Modes: []ModeResult{
			{Mode: "single", Saturation: &Saturation{Events: 10, EndToEndPerSec: 600, PaymentsPerSec: 400}},
			{Mode: "batch", Unavailable: errBatchUnavailable.Error()},
		},
	}
	require.Zero(t, r.ceilingRatio(), "the headline is the default mode's, which did not run")
	require.InDelta(t, 0.3, r.modeRatio("single"), 1e-9)
	var buf bytes.Buffer
	writeTable(&buf, r)
	out := buf.String()
	require.Contains(t, out, "| 600 | 0.30 | n/a (batch endpoint not available) | — |")
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "|") {
			require.Equal(t, 2+2*2, strings.Count(line, "|")-1, "every row has all columns: %s", line)
		}
	}
}

func TestCompareMarksARegression(t *testing.T) {
	t.Parallel()
	run := func(e2e, p99 float64) *Result {
		return &Result{Ceiling: Ceiling{ProducerTxPerSec: 2000}, Commit: "abc",
			Modes: []ModeResult{{Mode: "batch", Saturation: &Saturation{Events: 10, EndToEndPerSec: e2e},
				Latency: []Latency{{}, {PayToShipment: Dist{P99: p99}}, {PayToShipment: Dist{P99: p99}}}}}}
	}
	var buf bytes.Buffer
	compareRuns(&buf, run(1500, 20), run(1200, 19))
	out := buf.String()
	require.Contains(t, out, "| batch: end to end events/s | 1,500 | 1,200 | -20 % **regression** |")
	require.Contains(t, out, "| batch: ÷ producer ceiling | 0.75 | 0.60 | -0.15 **regression** |")
	require.Contains(t, out, "| batch: pay→shipment p99 ms at 50 % | 20.0 | 19.0 | -5 % |", "lower latency is no regression")
}

func TestRiverRowsNameTheirSettingsAndMarkTheBest(t *testing.T) {
	t.Parallel()
	r := &Result{
		Plan:    plan{Scaling: 20_000, Replicas: fullPlan.Replicas, River: fullPlan.River},
		Ceiling: Ceiling{ProducerTxPerSec: 2000},
		Modes:   []ModeResult{{Mode: "single"}, {Mode: "batch"}},
		River: []RiverRun{
			{Result: baseline.Result{River: "v0.51.2", MaxWorkers: 16, FetchCooldown: "100ms (default)", EventsPerSec: 160, SecondsToEmpty: 125}},
			{Result: baseline.Result{River: "v0.51.2", MaxWorkers: 100, FetchCooldown: "10ms", EventsPerSec: 1400, SecondsToEmpty: 14.3, Snoozed: 2}},
			{Result: baseline.Result{MaxWorkers: 100, FetchCooldown: "100ms (default)"}, Error: "the River baseline: exit status 1\nlog"},
		},
	}
	var buf bytes.Buffer
	writeTable(&buf, r)
	out := buf.String()
	require.Contains(t, out, "| 4 | River v0.51.2, 1 client, MaxWorkers 16, FetchCooldown 100ms (default): 20,000 seeded events drained, events/s (seconds) | 160 (125.0 s) | 0.08 | 160 (125.0 s) | 0.08 |")
	require.Contains(t, out, "| 4 | River v0.51.2, 1 client, MaxWorkers 100, FetchCooldown 10ms: 20,000 seeded events drained, events/s (seconds), **best of the sweep** | 1,400 (14.3 s), 2 snoozed on 409, 0 retried | 0.70 |")
	require.Contains(t, out, "| 4 | River, 1 client, MaxWorkers 100, FetchCooldown 100ms (default) | failed: the River baseline: exit status 1 | — |")
	require.Equal(t, len(fullPlan.Replicas), strings.Count(out, "dispatcher replica(s)"), "a row for each count of the plan")
	require.Less(t, strings.LastIndex(out, "dispatcher replica(s)"), strings.Index(out, "River v0.51.2"), "beside the scaling rows, after them")
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "|") {
			require.Equal(t, 2+2*2, strings.Count(line, "|")-1, "every row has all columns: %s", line)
		}
	}
}

func TestRiverRowsOfAShortRun(t *testing.T) {
	t.Parallel()
	one := &Result{Short: true, Plan: plan{Scaling: 1500, River: shortPlan.River}, Modes: []ModeResult{{Mode: "batch"}},
		River: []RiverRun{{Result: baseline.Result{River: "v0.51.2", MaxWorkers: 100, FetchCooldown: "10ms", EventsPerSec: 1384, SecondsToEmpty: 1.1}}}}
	rows := riverRows(one, func(float64) float64 { return math.NaN() })
	require.Len(t, rows, 1)
	require.NotContains(t, rows[0].label, "best", "one setting is no sweep")

	none := &Result{Short: true, Modes: []ModeResult{{Mode: "batch"}}}
	rows = riverRows(none, func(float64) float64 { return math.NaN() })
	require.Len(t, rows, 1)
	v, _ := cell(none.Modes[0], rows[0])
	require.Equal(t, "not measured in -short", v)
	require.Empty(t, riverRows(&Result{}, nil), "a full run without the River phase has no River row")
}

func TestScalingRowsFollowThePlan(t *testing.T) {
	t.Parallel()
	for _, p := range []plan{fullPlan, shortPlan} {
		rows := scalingRows(&Result{Plan: p}, func(float64) float64 { return 0 })
		require.Len(t, rows, len(p.Replicas))
		for i, n := range p.Replicas {
			require.Contains(t, rows[i].label, fmt.Sprintf("drained by %d dispatcher replica(s)", n))
		}
	}
}
