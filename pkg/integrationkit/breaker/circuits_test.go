package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/breaker"
)

func TestCircuitsListsEveryDestinationThatFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, b := setup(t, breaker.Config{Threshold: 2, Cooldown: time.Minute})

	none, err := b.Circuits(ctx, db)
	require.NoError(t, err)
	require.Empty(t, none)

	fail := func(dest string) {
		p, err := b.Acquire(ctx, db, dest)
		require.NoError(t, err)
		_, err = b.Failure(ctx, db, dest, p)
		require.NoError(t, err)
	}
	fail("http://b")
	fail("http://b")
	fail("http://a")
	p, err := b.Acquire(ctx, db, "http://c")
	require.NoError(t, err)
	_, err = b.Success(ctx, db, "http://c", p)
	require.NoError(t, err)

	got, err := b.Circuits(ctx, db)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "http://a", got[0].Destination)
	require.Equal(t, breaker.Closed, got[0].State)
	require.Equal(t, 1, got[0].Failures)
	require.Nil(t, got[0].OpenUntil)
	require.Equal(t, "http://b", got[1].Destination)
	require.Equal(t, breaker.Open, got[1].State)
	require.NotNil(t, got[1].OpenUntil)
	require.WithinDuration(t, time.Now().Add(time.Minute), *got[1].OpenUntil, 10*time.Second)
}
