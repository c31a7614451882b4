package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A round closes as soon as every request in flight has reported; while some have
// not, it waits for them at most settleLinger.
func TestSettlerRoundWaitsOnlyForRequestsInFlight(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		inflight int
		queued   int // reported besides the round's first
		want     int
		lingers  bool
	}{
		{"alone", 1, 0, 1, false},
		{"all reported", 3, 2, 3, false},
		{"one still in flight", 4, 2, 3, true},
		{"round full", 20, 8, 8, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSettler(nil, func() int { return c.inflight }, 8)
			for range c.queued {
				s.in <- settleCall{}
			}
			start := time.Now()
			round := s.gather(settleCall{})
			took := time.Since(start)
			require.Len(t, round, c.want)
			if c.lingers {
				require.GreaterOrEqual(t, took, settleLinger)
			}
		})
	}
}
