package insight

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Histograms add up from their text form, and the percentiles land inside the bucket
// that holds them, within its width.
func TestHistogramPercentiles(t *testing.T) {
	t.Parallel()
	var h []int64
	h = addHist(h, "{}")
	require.Nil(t, h)
	h = addHist(h, "{0,0,0,10}")
	h = addHist(h, "{0,0,0,5,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1}")
	require.Len(t, h, latencyBuckets)
	require.EqualValues(t, 15, h[3])
	require.EqualValues(t, 1, h[21])

	p50, ok := percentile(h, 0.5)
	require.True(t, ok)
	require.Greater(t, p50, bucketBound(2))
	require.LessOrEqual(t, p50, bucketBound(3))
	p99, _ := percentile(h, 0.99)
	require.Greater(t, p99, bucketBound(20))
	require.LessOrEqual(t, p99, bucketBound(21))
	require.InDelta(t, float64(10*time.Second), float64(bucketBound(30)), float64(300*time.Millisecond))

	_, ok = percentile(make([]int64, latencyBuckets), 0.5)
	require.False(t, ok)
}
