package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
)

// A paused destination is refused to every caller, whatever its circuit's state, and
// an open circuit past its cool-down grants no probe while paused; resumed, the
// circuit decides again, its state kept.
func TestPauseRefusesEveryCallerUntilResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A cool-down of a microsecond is over by the next statement's now(): the circuit
	// opened below may probe at once, but for the pause.
	db, b := setup(t, breaker.Config{Threshold: 1, Cooldown: time.Microsecond, PausedWait: 42 * time.Second})
	const dest, other = "http://receiver", "http://other"

	changed, err := b.Pause(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = b.Pause(ctx, db, dest)
	require.NoError(t, err)
	require.False(t, changed, "paused already")
	paused, err := b.Paused(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, paused)

	for range 3 {
		p, err := b.Acquire(ctx, db, dest)
		require.NoError(t, err)
		require.Equal(t, breaker.Permit{Paused: true, Wait: 42 * time.Second}, p)
	}
	p, err := b.Acquire(ctx, db, other)
	require.NoError(t, err)
	require.True(t, p.Allowed, "other destinations go on")

	tr, err := b.Failure(ctx, db, dest, breaker.Permit{})
	require.NoError(t, err)
	require.Equal(t, breaker.Opened, tr, "a paused destination's circuit still counts")
	p, err = b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, p.Paused)
	require.False(t, p.Probe, "no probe while paused")

	circuits, err := b.Circuits(ctx, db)
	require.NoError(t, err)
	require.Len(t, circuits, 1)
	require.NotNil(t, circuits[0].PausedAt)

	changed, err = b.Resume(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = b.Resume(ctx, db, dest)
	require.NoError(t, err)
	require.False(t, changed, "not paused")
	changed, err = b.Resume(ctx, db, other)
	require.NoError(t, err)
	require.False(t, changed, "never paused")
	p, err = b.Acquire(ctx, db, dest)
	require.NoError(t, err)
	require.True(t, p.Allowed && p.Probe, "the open circuit probes once resumed")
	paused, err = b.Paused(ctx, db, dest)
	require.NoError(t, err)
	require.False(t, paused)
}
