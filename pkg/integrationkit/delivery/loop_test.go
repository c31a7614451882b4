package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// When the loop claims: at once with nothing in flight; in single mode, while requests
// are in flight, once an eighth of the slots are free; in batch mode, while a batch is
// in flight, only when the last claim was full (a backlog).
func TestLoopClaimsWhenSlotsAllow(t *testing.T) {
	t.Parallel()
	single, batch := &Dispatcher{cfg: Config{Mode: ModeSingle}}, &Dispatcher{cfg: Config{Mode: ModeBatch}}
	for _, tc := range []struct {
		name       string
		d          *Dispatcher
		free, busy int
		full       bool
		want       bool
	}{
		{"single, idle", single, 64, 0, false, true},
		{"single, every slot busy", single, 0, 64, true, false},
		{"single, one slot free of 64", single, 1, 63, true, false},
		{"single, seven free of 64", single, 7, 57, true, false},
		{"single, an eighth free", single, 8, 56, false, true},
		{"single, one slot of four, none busy", single, 1, 0, false, true},
		{"single, one slot free of four", single, 1, 3, false, true},
		{"batch, idle", batch, 1, 0, false, true},
		{"batch, one in flight after a partial claim", batch, 1, 1, false, false},
		{"batch, one in flight after a full claim", batch, 1, 1, true, true},
		{"batch, both slots busy", batch, 0, 2, true, false},
	} {
		require.Equal(t, tc.want, tc.d.mayClaim(tc.free, tc.busy, tc.full), tc.name)
	}
}
