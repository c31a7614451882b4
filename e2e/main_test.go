package e2e_test

import (
	"os"
	"testing"

	"handoff/e2e/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBinaries()
	os.Exit(code)
}
