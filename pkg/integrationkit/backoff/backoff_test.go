package backoff

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFullJitterStaysWithinTheCeiling(t *testing.T) {
	t.Parallel()
	s := Schedule(DefaultSchedule)
	r := rand.New(rand.NewPCG(1, 2))
	for failure := 1; failure <= 10; failure++ {
		ceiling := s.Ceiling(failure)
		var seenLow, seenHigh bool
		for range 2000 {
			d := s.FullJitter(failure, r)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling)
			seenLow = seenLow || d < ceiling/4
			seenHigh = seenHigh || d > ceiling*3/4
		}
		require.True(t, seenLow && seenHigh, "failure %d: jitter should spread over [0, %s]", failure, ceiling)
	}
	require.Equal(t, 4*time.Hour, s.Ceiling(99), "the last step repeats")
	require.Equal(t, 5*time.Second, s.Ceiling(0))
	require.Zero(t, Schedule(nil).FullJitter(1, r))
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"0", time.Second, true},
		{"1", time.Second, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"garbage", 0, false},
		{"999999999", time.Hour, true},
		{"99999999999999999999999", time.Hour, true},
		{"Sun, 29 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 29 Nov 2026 11:00:00 GMT", time.Second, true},
		{"Mon, 30 Nov 2026 12:00:00 GMT", time.Hour, true},
		{"Sunday, 29-Nov-26 12:01:00 GMT", time.Minute, true},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		require.Equal(t, c.ok, ok, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "1.5", "Sun, 29 Nov 2026 12:00:30 GMT", "x", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if !ok {
			if d != 0 {
				t.Fatalf("rejected %q but returned %s", s, d)
			}
			return
		}
		if d < MinRetryAfter || d > MaxRetryAfter {
			t.Fatalf("%q gave %s outside the bounds", s, d)
		}
	})
}
