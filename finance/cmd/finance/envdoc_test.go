package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpAndReadmeDocumentEveryVariable keeps --help and the README's configuration
// table the complete list of what finance reads: the compose validation in e2e/deploy
// takes its variable names from --help, so a variable read but not documented would
// go unchecked there.
func TestHelpAndReadmeDocumentEveryVariable(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help"}, nil, &help, &help))
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	names := (&config{}).settings().Names()
	require.NotEmpty(t, names)
	for _, name := range names {
		require.Regexp(t, regexp.MustCompile(`(?m)^  `+name+`\s`), help.String(), "finance reads %s but --help does not list it", name)
		require.True(t, strings.Contains(string(readme), "`"+name+"`"), "finance reads %s but README.md does not list it", name)
	}
}
