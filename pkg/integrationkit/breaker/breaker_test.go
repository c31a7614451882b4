package breaker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/pgtest"
)

func setup(t *testing.T, cfg breaker.Config) (*bun.DB, *breaker.Breaker) {
	t.Helper()
	db, _ := pgtest.NewDB(t, "kitbreaker", fstest.MapFS{
		"000001_breakers.up.sql":   {Data: []byte(breaker.Schema("kit_breakers"))},
		"000001_breakers.down.sql": {Data: []byte(`DROP TABLE kit_breakers;`)},
	})
	cfg.Table = "kit_breakers"
	b, err := breaker.New(cfg)
	require.NoError(t, err)
	return db, b
}

func TestCircuitOpensAfterThresholdAndProbesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The cool-down is long enough for the refusal below to come within it on a
	// loaded machine: at 300 ms, a CI run with every module's tests beside it once
	// reached that Acquire after the cool-down had passed.
	db, b := setup(t, breaker.Config{Threshold: 3, Cooldown: 2 * time.Second, ProbeLease: 5 * time.Second})
	const dest = "http://receiver"

	// Three replicas fail concurrently many times: the circuit opens exactly once.
	var opened atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			p, err := b.Acquire(ctx, db, dest)
			if err != nil || !p.Allowed {
				return
			}
			tr, err := b.Failure(ctx, db, dest, p)
			if err == nil && tr == breaker.Opened {
				opened.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, opened.Load())
	state, err := b.State(ctx, db, dest)
	require.NoError(t, err)
	require.Equal(t, breaker.Open, state)

	p, err := b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	require.False(t, p.Allowed, "open circuit refuses during the cool-down")
	require.Greater(t, p.Wait, time.Duration(0))

	// After the cool-down, 20 concurrent callers: exactly one probe.
	probe := waitProbe(t, db, b, dest)
	p, err = b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	require.False(t, p.Allowed, "half-open admits only the probe")

	tr, err := b.Failure(ctx, db, dest, probe)
	require.NoError(t, err)
	require.Equal(t, breaker.Reopened, tr)

	probe = waitProbe(t, db, b, dest)
	tr, err = b.Success(ctx, db, dest, probe)
	require.NoError(t, err)
	require.Equal(t, breaker.Recovered, tr)
	p, err = b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, p.Allowed)
}

// waitProbe waits out the cool-down, then races 20 callers for the probe.
func waitProbe(t *testing.T, db *bun.DB, b *breaker.Breaker, dest string) breaker.Permit {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(5 * time.Second); ; {
		p, err := b.Acquire(ctx, db, dest)
		require.NoError(t, err)
		require.False(t, p.Allowed && !p.Probe)
		if p.Probe {
			// We won the probe alone; prove no one else can get one while it is out.
			var others atomic.Int32
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					q, err := b.Acquire(ctx, db, dest)
					if err == nil && q.Allowed {
						others.Add(1)
					}
				})
			}
			wg.Wait()
			require.Zero(t, others.Load(), "exactly one probe cluster-wide")
			return p
		}
		require.True(t, time.Now().Before(deadline), "no probe after the cool-down")
		// A wait for wall-clock time, not for work: the refusal says how long the
		// cool-down has left on the database's clock; ask again when it is over.
		time.Sleep(p.Wait)
	}
}

func TestResultOfAnEarlierGenerationChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, b := setup(t, breaker.Config{Threshold: 2, Cooldown: time.Hour})
	const dest = "http://receiver"
	early, err := b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	for range 2 {
		p, err := b.Acquire(ctx, db, dest)
		require.NoError(t, err)
		_, err = b.Failure(ctx, db, dest, p)
		require.NoError(t, err)
	}
	state, err := b.State(ctx, db, dest)
	require.NoError(t, err)
	require.Equal(t, breaker.Open, state)
	// A request started while closed finishes after the circuit opened.
	tr, err := b.Failure(ctx, db, dest, early)
	require.NoError(t, err)
	require.Empty(t, tr)
	_, err = b.Success(ctx, db, dest, early)
	require.NoError(t, err)
	state, err = b.State(ctx, db, dest)
	require.NoError(t, err)
	require.Equal(t, breaker.Open, state)
}

func TestSuccessResetsTheStreak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, b := setup(t, breaker.Config{Threshold: 3})
	const dest = "http://receiver"
	for range 5 {
		for _, fail := range []bool{true, true, false} {
			p, err := b.Acquire(ctx, db, dest)
			require.NoError(t, err)
			require.True(t, p.Allowed)
			if fail {
				_, err = b.Failure(ctx, db, dest, p)
			} else {
				_, err = b.Success(ctx, db, dest, p)
			}
			require.NoError(t, err)
		}
	}
	state, err := b.State(ctx, db, dest)
	require.NoError(t, err)
	require.Equal(t, breaker.Closed, state)
}

// The circuit opens on Threshold consecutive failures in the order results are
// recorded, whenever their permits were granted: with every permit taken before any
// result (requests in flight together) a success still breaks the streak.
func TestConsecutiveFailureSequences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		results string // F a failure, S a success, in the order they are recorded
		opens   bool
	}{
		{"FFFFF", true},
		{"FFFFSF", false},
		{"FFFFSFFFF", false},
		{"FFFFSFFFFF", true},
		{"SFFFFF", true},
		{"FFSFFSFFSFF", false},
	}
	for _, c := range cases {
		for _, upFront := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/permits_up_front=%v", c.results, upFront), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, b := setup(t, breaker.Config{Threshold: 5, Cooldown: time.Hour})
				const dest = "http://receiver"
				permits := make([]breaker.Permit, len(c.results))
				acquire := func(i int) {
					p, err := b.Acquire(ctx, db, dest)
					require.NoError(t, err)
					require.True(t, p.Allowed, "result %d: the circuit opened too early", i+1)
					permits[i] = p
				}
				if upFront {
					for i := range c.results {
						acquire(i)
					}
				}
				opened := false
				for i, r := range c.results {
					if !upFront {
						acquire(i)
					}
					var tr breaker.Transition
					var err error
					if r == 'F' {
						tr, err = b.Failure(ctx, db, dest, permits[i])
					} else {
						tr, err = b.Success(ctx, db, dest, permits[i])
					}
					require.NoError(t, err)
					if tr == breaker.Opened {
						require.Equal(t, len(c.results)-1, i, "opened before the last result")
						opened = true
					}
				}
				require.Equal(t, c.opens, opened)
				state, err := b.State(ctx, db, dest)
				require.NoError(t, err)
				require.Equal(t, c.opens, state == breaker.Open)
			})
		}
	}
}
