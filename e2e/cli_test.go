package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

// runBinary runs one of the built binaries with args and the variables in environ
// (nothing else), and returns its stdout, stderr and exit status.
func runBinary(t *testing.T, binary string, environ []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.Binaries(t), binary), args...)
	cmd.Env = environ
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// A mistake on the command line of either binary exits 2 with the error and the usage
// of that command on stderr, and nothing on stdout; --help prints that usage on
// stdout and exits 0.
func TestCLIMistakeExits2WithTheCommandsUsage(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runBinary(t, "finance", nil, "outbox", "list", "--nope")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "finance: outbox list: flag provided but not defined: --nope\n\nUsage: finance outbox list [flags]\n")
	require.Contains(t, stderr, "  --status=<status>")
	help, _, code := runBinary(t, "finance", nil, "outbox", "list", "--help")
	require.Equal(t, 0, code)
	require.Equal(t, stderr[len("finance: outbox list: flag provided but not defined: --nope\n\n"):], help)

	_, stderr, code = runBinary(t, "finance", nil, "reconcile", "--since=yesterday")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "Usage: finance reconcile [flags]")

	stdout, stderr, code = runBinary(t, "logistics", nil, "retention", "run", "--nope")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "logistics: retention run: flag provided but not defined: --nope\n\nUsage: logistics retention run\n")
}

// finance outbox stats and list --json print one JSON document on stdout.
func TestCLIJSON(t *testing.T) {
	t.Parallel()
	environ := []string{"DATABASE_URL=" + pgtest.NewURL(t, "finance", migrations.Finance())}
	stdout, stderr, code := runBinary(t, "finance", environ, "outbox", "stats", "--json")
	require.Equal(t, 0, code, stderr)
	var stats struct {
		Counts map[string]int64 `json:"counts"`
		DueNow *int64           `json:"due_now"`
		AsOf   string           `json:"as_of"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(stdout)))
	require.NoError(t, dec.Decode(&stats), stdout)
	require.False(t, dec.More(), "one document")
	require.Equal(t, map[string]int64{"pending": 0, "failed": 0, "delivered": 0, "skipped": 0}, stats.Counts)
	require.NotNil(t, stats.DueNow)
	require.NotEmpty(t, stats.AsOf)

	stdout, stderr, code = runBinary(t, "finance", environ, "outbox", "list", "--status=failed", "--json")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `{"items": [], "next_cursor": null}`, stdout)
}
