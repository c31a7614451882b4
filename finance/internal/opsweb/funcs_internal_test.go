package opsweb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRelativeTimesReadWell(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "—"},
		{now.Add(-2 * time.Second), "just now"},
		{now.Add(3 * time.Second), "just now"},
		{now.Add(-42 * time.Second), "42 s ago"},
		{now.Add(-3*time.Minute - 10*time.Second), "3 min ago"},
		{now.Add(20 * time.Second), "in 20 s"},
		{now.Add(-5 * time.Hour), "5 h ago"},
		{now.Add(-72 * time.Hour), "3 days ago"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, relative(c.at, now), c.at)
	}
}
