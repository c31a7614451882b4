package main

import (
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpDocumentsEveryVariable keeps --help the complete list of what finance reads:
// the compose validation in e2e/deploy takes its variable names from --help, so a
// variable read but not documented would go unchecked there.
func TestHelpDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	var read []string
	record := func(name string) (string, bool) {
		read = append(read, name)
		return "", false
	}
	_, _ = parseConfig(record)
	require.NotEmpty(t, read)
	for _, name := range slices.Compact(slices.Sorted(slices.Values(read))) {
		require.Regexp(t, regexp.MustCompile(`(?m)^  `+name+`\s`), envDoc, "finance reads %s but --help does not list it", name)
	}
}
