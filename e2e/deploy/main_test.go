package deploy

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBinaries()
	os.Exit(code)
}

// binaries builds finance and logistics once per test process (without the race
// detector: these tests run them briefly) and returns their directory.
func binaries(t testing.TB) string {
	t.Helper()
	dir, err := harness.Build(false)
	require.NoError(t, err)
	return dir
}
