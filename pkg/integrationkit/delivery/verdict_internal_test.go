package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/egress"
)

// Only faults of the receiver or of the path to it count toward opening a circuit.
func TestVerdictCountsOnlyReceiverFaults(t *testing.T) {
	t.Parallel()
	timeout := &net.OpError{Op: "dial", Err: context.DeadlineExceeded}
	cases := []struct {
		status int
		err    error
		want   verdict
	}{
		{200, nil, healthy}, {204, nil, healthy}, {301, nil, healthy},
		{400, nil, healthy}, {401, nil, healthy}, {403, nil, healthy}, {404, nil, healthy},
		{409, nil, healthy}, {410, nil, healthy}, {413, nil, healthy}, {422, nil, healthy},
		{425, nil, healthy},
		{429, nil, neutral},
		{408, nil, failing}, {500, nil, failing}, {502, nil, failing}, {503, nil, failing}, {504, nil, failing},
		{0, timeout, failing},
		{0, context.DeadlineExceeded, failing},
		{0, syscall.ECONNREFUSED, failing},
		{0, syscall.ECONNRESET, failing},
		{0, &egress.BlockedError{Addr: "127.0.0.1:80", Reason: "loopback"}, neutral},
	}
	for _, c := range cases {
		name := fmt.Sprint(c.status)
		if c.err != nil {
			name = c.err.Error()
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, verdictOf(answerOf(response{status: c.status, err: c.err})))
		})
	}
	require.Equal(t, failing, verdictOf(answerOf(response{err: fmt.Errorf("post: %w", errors.New("broken pipe"))})))
	require.Equal(t, healthy, verdictOf(answerOf(response{status: http.StatusTooEarly})))
}
