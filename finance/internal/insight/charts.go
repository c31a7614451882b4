package insight

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Window is the stretch of time a chart covers and the width of one point.
type Window struct {
	// Key names the window in a URL: "1h" or "24h".
	Key  string
	Span time.Duration
	Step time.Duration
}

// The windows the dashboard offers.
var (
	Hour = Window{Key: "1h", Span: time.Hour, Step: time.Minute}
	Day  = Window{Key: "24h", Span: 24 * time.Hour, Step: 15 * time.Minute}
)

// WindowOf returns the window key names; anything else is Hour.
func WindowOf(key string) Window {
	if key == Day.Key {
		return Day
	}
	return Hour
}

// Point is one step of a window.
type Point struct {
	// At is the start of the step.
	At time.Time
	// Delivered, Failed and Retried are requests per minute, averaged over the step.
	Delivered, Failed, Retried float64
	// Sampled reports whether the backlog was sampled in the step (a replica ran);
	// Pending and OldestPending are then the largest samples of the step.
	Sampled       bool
	Pending       int64
	OldestPending time.Duration
	// Latency reports whether any event was delivered in the step; P50 and P95 are
	// then the written→delivered latency's estimated percentiles.
	Latency  bool
	P50, P95 time.Duration
}

// Charts is the window's points, oldest first; the last one is still going on.
type Charts struct {
	Window Window
	// Now is the database's clock when the points were read.
	Now    time.Time
	Points []Point
}

type minuteRow struct {
	Minute        time.Time `bun:"minute"`
	Delivered     int64     `bun:"delivered"`
	Failed        int64     `bun:"failed"`
	Retried       int64     `bun:"retried"`
	Latency       string    `bun:"latency"` // the array's text, {0,3,1,…}
	Pending       *int64    `bun:"pending"`
	OldestPending *float64  `bun:"oldest_pending_secs"`
}

// Charts reads w's points from the rollup (see Roll): at most 1,440 rows of one index
// range, whatever the size of the outbox.
func (s *Store) Charts(ctx context.Context, w Window) (Charts, error) {
	out := Charts{Window: w}
	var rows []minuteRow
	err := s.db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		func(ctx context.Context, tx bun.Tx) error {
			if err := tx.NewRaw(`SELECT now()`).Scan(ctx, &out.Now); err != nil {
				return err
			}
			first := out.Now.Truncate(w.Step).Add(w.Step - w.Span)
			return tx.NewRaw(`SELECT minute, delivered, failed, retried, latency::text AS latency, pending, oldest_pending_secs
				FROM finance_outbox_minutes WHERE minute >= ? ORDER BY minute`, first).Scan(ctx, &rows)
		})
	if err != nil {
		return Charts{}, fmt.Errorf("insight: charts: %w", err)
	}
	out.Points = points(w, out.Now, rows)
	return out, nil
}

// points folds the minutes into w's steps ending with the one holding now.
func points(w Window, now time.Time, rows []minuteRow) []Point {
	n := int(w.Span / w.Step)
	first := now.Truncate(w.Step).Add(w.Step - w.Span)
	pts := make([]Point, n)
	hists := make([][]int64, n)
	for i := range pts {
		pts[i].At = first.Add(time.Duration(i) * w.Step)
	}
	perMinute := w.Step.Minutes()
	for _, r := range rows {
		i := int(r.Minute.Sub(first) / w.Step)
		if i < 0 || i >= n {
			continue
		}
		p := &pts[i]
		p.Delivered += float64(r.Delivered) / perMinute
		p.Failed += float64(r.Failed) / perMinute
		p.Retried += float64(r.Retried) / perMinute
		if r.Pending != nil {
			p.Sampled = true
			p.Pending = max(p.Pending, *r.Pending)
			p.OldestPending = max(p.OldestPending, time.Duration(*r.OldestPending*float64(time.Second)))
		}
		hists[i] = addHist(hists[i], r.Latency)
	}
	for i, h := range hists {
		if p50, ok := percentile(h, 0.50); ok {
			pts[i].Latency, pts[i].P50 = true, p50
			pts[i].P95, _ = percentile(h, 0.95)
		}
	}
	return pts
}

// latencyBuckets is the length of a latency histogram: bucket i counts latencies up to
// bucketBound(i), each bound 2^(1/3) times the one before, from 10 ms to about 38 h;
// the last bucket also holds everything longer.
const latencyBuckets = 72

func bucketBound(i int) time.Duration {
	return time.Duration(float64(10*time.Millisecond) * math.Exp2(float64(i)/3))
}

// addHist adds the histogram h, an int[] in PostgreSQL's text form ({0,3,1,…}), to
// sum. Reading the text by hand is many times cheaper than scanning 1,440 arrays
// through reflection.
func addHist(sum []int64, h string) []int64 {
	h = strings.Trim(h, "{}")
	if h == "" {
		return sum
	}
	if sum == nil {
		sum = make([]int64, latencyBuckets)
	}
	var i int
	var n int64
	for j := 0; j <= len(h); j++ {
		if j == len(h) || h[j] == ',' {
			if i < len(sum) {
				sum[i] += n
			}
			i, n = i+1, 0
			continue
		}
		n = n*10 + int64(h[j]-'0')
	}
	return sum
}

// percentile estimates the q-quantile of a histogram, interpolating geometrically
// inside the bucket where it falls (an error of at most 13 %); false when it is empty.
func percentile(h []int64, q float64) (time.Duration, bool) {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range h {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			hi := float64(bucketBound(i))
			lo := hi / math.Cbrt(2)
			frac := (rank - seen) / float64(n)
			return time.Duration(lo * math.Pow(hi/lo, frac)), true
		}
		seen += float64(n)
	}
	return bucketBound(len(h) - 1), true
}
