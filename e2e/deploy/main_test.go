package deploy

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

func TestMain(m *testing.M) { harness.RunTests(m) }

// runBinary runs the built binary bin (finance or logistics) with args and an empty
// environment, requires it to succeed, and returns what it wrote on stdout.
func runBinary(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.Binaries(t), bin), args...)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s%s", bin, strings.Join(args, " "), out, &stderr)
	return out
}
