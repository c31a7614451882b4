package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/schedule"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The job runs on the schedule with the runner's context, and Run returns only after
// the run in progress has seen that context end.
func TestRunsOnScheduleAndWaitsForTheJob(t *testing.T) {
	t.Parallel()
	started, finished := make(chan struct{}), make(chan struct{})
	r, err := schedule.New("@every 1s", func(ctx context.Context) {
		select {
		case started <- struct{}{}:
		default:
			return
		}
		<-ctx.Done()
		close(finished)
	}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the job did not run")
	}
	cancel()
	require.NoError(t, <-done)
	select {
	case <-finished:
	default:
		t.Fatal("Run returned before the job did")
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"0 3 * * *", "@every 10m", "@hourly", "*/5 * * * *"} {
		require.NoError(t, schedule.Validate(ok), ok)
	}
	for _, bad := range []string{"", "3am", "0 3 * *", "@every soon"} {
		require.Error(t, schedule.Validate(bad), bad)
	}
	_, err := schedule.New("@hourly", nil, nil)
	require.Error(t, err)
}
