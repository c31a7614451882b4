// Package devrun checks scripts/run.sh, what `make run` runs, as a newcomer meets it.
package devrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// TestRunNamesATakenPort holds one service's address with a listener and runs
// scripts/run.sh on it: within 15 s it exits non-zero, naming the address, its holder
// and the variable that moves the service, before it has built or started anything.
func TestRunNamesATakenPort(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "run.sh"))
	require.NoError(t, err)
	for _, variable := range []string{"FINANCE_ADDR", "LOGISTICS_ADDR"} {
		t.Run(variable, func(t *testing.T) {
			t.Parallel()
			held, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = held.Close() })
			addr := map[string]string{"FINANCE_ADDR": freeAddr(t), "LOGISTICS_ADDR": freeAddr(t)}
			addr[variable] = held.Addr().String()
			data := t.TempDir()

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", script)
			cmd.Env = append(os.Environ(), "FINANCE_ADDR="+addr["FINANCE_ADDR"],
				"LOGISTICS_ADDR="+addr["LOGISTICS_ADDR"], "DATA_DIR="+data)
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "run.sh did not answer within 15 s:\n%s", out)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "run.sh exits non-zero: %v\n%s", err, out)

			require.Contains(t, string(out), held.Addr().String()+" is already in use (by ")
			require.Regexp(t, fmt.Sprintf(`\(by (pid %d, |another program\))`, os.Getpid()), string(out),
				"the holder is this test, or unknown when ss cannot tell")
			require.Contains(t, string(out), "set "+variable+" to a free address, e.g. "+variable+"=127.0.0.1:")
			entries, err := os.ReadDir(data)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing was created or started")
		})
	}
}

// freeAddr returns a loopback address nothing listens on (it did not a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	return addr
}
