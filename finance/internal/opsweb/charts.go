package opsweb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"handoff/finance/internal/insight"
)

// The drawing area of every chart, in SVG user units. The SVG stretches to its box
// (preserveAspectRatio="none") and its lines keep their width (non-scaling-stroke),
// so one drawing serves a phone and a desktop; the text stays in HTML.
const (
	chartW = 600
	chartH = 140
)

// chartView is one inline SVG chart with its legend and labels.
type chartView struct {
	ID, Title string
	// Summary states the latest values in words.
	Summary string
	// Top labels the value of the top edge; From and To the left and right edges.
	Top, From, To string
	Series        []seriesView
	// Threshold, when set, is a dashed line at an alert's threshold.
	Threshold *thresholdView
	// Columns are one invisible box per step, whose title shows the step's values on
	// hover.
	Columns []columnView
	W, H    int
}

type seriesView struct {
	Class, Name string
	// Lines are polyline point lists; a step without a value breaks the line.
	Lines []string
}

type thresholdView struct {
	Y     float64
	Label string
}

type columnView struct {
	X, W  float64
	Title string
}

// seriesSpec says how to read one series from a point: its value and whether it has
// one at that point.
type seriesSpec struct {
	class, name string
	value       func(insight.Point) (float64, bool)
}

// chartSpec describes a chart: its series, how to write a value, and an optional
// threshold (in the series' unit).
type chartSpec struct {
	id, title      string
	series         []seriesSpec
	format         func(float64) string
	threshold      float64
	thresholdLabel string
	summary        func(insight.Charts) string
}

// charts are the overview's four charts of c; pendingAge is ALERT_PENDING_AGE.
func charts(c insight.Charts, pendingAge time.Duration) []chartView {
	rate := func(f func(insight.Point) float64) func(insight.Point) (float64, bool) {
		return func(p insight.Point) (float64, bool) { return f(p), true }
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	specs := []chartSpec{
		{id: "chart-throughput", title: "Requests per minute", format: perMinute,
			series: []seriesSpec{
				{"delivered", "delivered", rate(func(p insight.Point) float64 { return p.Delivered })},
				{"retried", "retried", rate(func(p insight.Point) float64 { return p.Retried })},
				{"failed", "failed", rate(func(p insight.Point) float64 { return p.Failed })},
			},
			summary: func(c insight.Charts) string {
				p := c.Points[len(c.Points)-1]
				return fmt.Sprintf("Latest %s: %s delivered, %s retried, %s failed per minute.",
					stepName(c.Window), perMinute(p.Delivered), perMinute(p.Retried), perMinute(p.Failed))
			}},
		{id: "chart-backlog", title: "Backlog (pending events)", format: count,
			series: []seriesSpec{{"pending", "pending", func(p insight.Point) (float64, bool) { return float64(p.Pending), p.Sampled }}},
			summary: func(c insight.Charts) string {
				if p, ok := lastSampled(c); ok {
					return fmt.Sprintf("Latest sample: %d pending.", p.Pending)
				}
				return "No sample in this window: no finance replica ran."
			}},
		{id: "chart-oldest", title: "Oldest pending event's age", format: seconds,
			threshold: secs(pendingAge), thresholdLabel: "ALERT_PENDING_AGE " + pendingAge.String(),
			series: []seriesSpec{{"oldest", "oldest pending", func(p insight.Point) (float64, bool) {
				return secs(p.OldestPending), p.Sampled
			}}},
			summary: func(c insight.Charts) string {
				if p, ok := lastSampled(c); ok {
					return fmt.Sprintf("Latest sample: %s; on-call is paged past %s.", seconds(secs(p.OldestPending)), pendingAge)
				}
				return "No sample in this window: no finance replica ran."
			}},
		{id: "chart-latency", title: "Written → delivered latency", format: seconds,
			series: []seriesSpec{
				{"p50", "p50", func(p insight.Point) (float64, bool) { return secs(p.P50), p.Latency }},
				{"p95", "p95", func(p insight.Point) (float64, bool) { return secs(p.P95), p.Latency }},
			},
			summary: func(c insight.Charts) string {
				for i := len(c.Points) - 1; i >= 0; i-- {
					if p := c.Points[i]; p.Latency {
						return fmt.Sprintf("Latest deliveries: p50 %s, p95 %s.", seconds(secs(p.P50)), seconds(secs(p.P95)))
					}
				}
				return "Nothing was delivered in this window."
			}},
	}
	out := make([]chartView, len(specs))
	for i, s := range specs {
		out[i] = draw(c, s)
	}
	return out
}

// draw scales the spec's series to the drawing area, 0 at the bottom edge.
func draw(c insight.Charts, s chartSpec) chartView {
	n := len(c.Points)
	top := s.threshold * 1.15
	for _, p := range c.Points {
		for _, sr := range s.series {
			if v, ok := sr.value(p); ok {
				top = max(top, v)
			}
		}
	}
	top = niceCeil(top)
	step := float64(chartW) / float64(n)
	x := func(i int) float64 { return (float64(i) + 0.5) * step }
	y := func(v float64) float64 { return chartH - 2 - v/top*(chartH-4) }
	v := chartView{ID: s.id, Title: s.title, Summary: s.summary(c), Top: s.format(top), W: chartW, H: chartH,
		From: fmt.Sprintf("%s ago", span(c.Window)), To: "now"}
	for _, sr := range s.series {
		view := seriesView{Class: sr.class, Name: sr.name}
		var line []string
		for i, p := range c.Points {
			val, ok := sr.value(p)
			if !ok {
				view.Lines, line = appendLine(view.Lines, line), nil
				continue
			}
			line = append(line, coord(x(i))+","+coord(y(val)))
		}
		view.Lines = appendLine(view.Lines, line)
		v.Series = append(v.Series, view)
	}
	if s.threshold > 0 {
		v.Threshold = &thresholdView{Y: y(s.threshold), Label: s.thresholdLabel}
	}
	for i, p := range c.Points {
		var vals []string
		for _, sr := range s.series {
			if val, ok := sr.value(p); ok {
				vals = append(vals, sr.name+" "+s.format(val))
			} else {
				vals = append(vals, sr.name+" —")
			}
		}
		v.Columns = append(v.Columns, columnView{X: float64(i) * step, W: step,
			Title: p.At.UTC().Format("15:04") + "–" + p.At.Add(c.Window.Step).UTC().Format("15:04") + "Z · " + strings.Join(vals, " · ")})
	}
	return v
}

// appendLine adds a polyline of at least one point; a lone point is drawn as a dot
// by doubling it (a polyline of one point draws nothing).
func appendLine(lines, pts []string) []string {
	switch len(pts) {
	case 0:
		return lines
	case 1:
		return append(lines, pts[0]+" "+pts[0])
	}
	return append(lines, strings.Join(pts, " "))
}

func coord(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, and at least 1.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func lastSampled(c insight.Charts) (insight.Point, bool) {
	for i := len(c.Points) - 1; i >= 0; i-- {
		if c.Points[i].Sampled {
			return c.Points[i], true
		}
	}
	return insight.Point{}, false
}

func perMinute(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

// seconds writes a duration in seconds the way a person reads it.
func seconds(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	case s < 3600:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.1f h", s/3600)
}

func span(w insight.Window) string {
	if w.Span >= time.Hour && w.Span%time.Hour == 0 {
		return fmt.Sprintf("%d h", int(w.Span/time.Hour))
	}
	return fmt.Sprintf("%d min", int(w.Span/time.Minute))
}

func stepName(w insight.Window) string {
	if w.Step == time.Minute {
		return "minute"
	}
	return fmt.Sprintf("%d min", int(w.Step/time.Minute))
}
