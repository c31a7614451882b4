// Package backoff computes retry delays: full jitter over a schedule, and the delay a
// receiver asks for with Retry-After.
package backoff

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedule is the upper bound of the delay after the 1st, 2nd, … counted
// failure; the last entry repeats.
var DefaultSchedule = []time.Duration{5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute, 4 * time.Hour}

// Schedule is a list of delay ceilings, one per counted failure.
type Schedule []time.Duration

// Ceiling returns the ceiling after the failure-th counted failure (1-based).
func (s Schedule) Ceiling(failure int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := min(max(failure, 1), len(s)) - 1
	return s[i]
}

// FullJitter returns a delay uniform in [0, Ceiling(failure)] (AWS "full jitter"), so
// a crowd of failed deliveries does not come back at the same instant.
func (s Schedule) FullJitter(failure int, r *rand.Rand) time.Duration {
	c := s.Ceiling(failure)
	if c <= 0 {
		return 0
	}
	if r == nil {
		return time.Duration(rand.Int64N(int64(c) + 1))
	}
	return time.Duration(r.Int64N(int64(c) + 1))
}

// Retry-After bounds: a receiver may not ask for less than a second or more than an
// hour.
const (
	MinRetryAfter = time.Second
	MaxRetryAfter = time.Hour
)

// ParseRetryAfter reads a Retry-After value (delay-seconds or an HTTP-date, RFC 9110
// §10.2.3) relative to now, clamped to [MinRetryAfter, MaxRetryAfter]. ok is false for
// an absent or malformed value, which the caller then ignores.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(MaxRetryAfter/time.Second) {
			// overflowing digits are still a valid (huge) delay
			return MaxRetryAfter, true
		}
		return clamp(time.Duration(secs) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return clamp(t.Sub(now)), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func clamp(d time.Duration) time.Duration {
	return min(max(d, MinRetryAfter), MaxRetryAfter)
}
