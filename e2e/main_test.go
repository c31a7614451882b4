package e2e_test

import (
	"testing"

	"handoff/e2e/harness"
)

func TestMain(m *testing.M) { harness.RunTests(m) }
