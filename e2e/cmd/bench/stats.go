package main

import (
	"slices"
	"time"
)

// Dist summarises a sample of durations, in milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// distOf returns the nearest-rank percentiles of ds (which it sorts).
func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	return Dist{
		N:   len(ds),
		P50: ms(percentile(ds, 50)),
		P95: ms(percentile(ds, 95)),
		P99: ms(percentile(ds, 99)),
		Max: ms(ds[len(ds)-1]),
	}
}

// percentile is the nearest-rank p-th percentile of sorted, which is not empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n), 1-based
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// rate is n events over d, per second (0 when d is not positive).
func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
