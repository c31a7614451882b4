package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/envconf"
)

// TestHelpAndReadmeDocumentEveryVariable keeps --help and the README's configuration
// table the complete list of what finance reads: the compose validation in e2e/deploy
// takes its variable names from --help, so a variable read but not documented would
// go unchecked there. (e2e/deploy TestReadmeConfigurationTable holds the whole table
// to the declarations; this catches a missing name without building the binaries.)
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

// TestHelpJSONIsTheDeclarations: `finance help --json`, which README's configuration
// table is generated from, prints the declarations --help prints, defaults included.
func TestHelpJSONIsTheDeclarations(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help", "--json"}, nil, &out, &out))
	var got envconf.Program
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "%s", out.String())
	require.Equal(t, (&config{}).settings().Program("finance"), got)
	var help bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"help"}, nil, &help, &help))
	flat := strings.Join(strings.Fields(help.String()), " ")
	for _, v := range got.Variables {
		if v.Default != "" {
			require.True(t, strings.Contains(flat, "default "+v.Default) || strings.Contains(flat, "default "+strconv.Quote(v.Default)),
				"--help and the JSON give %s one default", v.Name)
		}
	}
}
