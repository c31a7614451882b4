// Package commandtest checks a binary built on command.Binary from the outside,
// through its run function: every service binary runs the same Suite with its own
// declarations, so the standard commands are tested once here and each binary shows
// only that it wired them. It is for tests only: a service's non-test code does not
// import it.
package commandtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/httpserver"
)

// Binary is a binary under test: what it declared to command.Binary, and its run.
type Binary struct {
	// Name is the binary's name, such as "finance".
	Name string
	// Run is the binary's run, which main hands to command.Main.
	Run command.RunFunc
	// Settings are the variables the binary declares.
	Settings envconf.Set
	// README is the path of the README whose configuration table must name every
	// variable of Settings.
	README string
}

// Suite runs, as parallel subtests of t, what every binary's standard commands
// promise: `help` and the README name every variable the binary declares; `help
// --json` prints the declarations, with the defaults `help` gives; `version` answers
// whatever the configuration; `healthcheck` probes /readyz at HTTP_ADDR, failing with
// the server's reason, and prints nothing.
func Suite(t *testing.T, b Binary) {
	t.Helper()
	t.Run("help and README name every variable", func(t *testing.T) {
		t.Parallel()
		b.helpAndREADMENameEveryVariable(t)
	})
	t.Run("help --json is the declarations", func(t *testing.T) {
		t.Parallel()
		b.helpJSONIsTheDeclarations(t)
	})
	t.Run("version needs no configuration", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, b.Run(context.Background(), []string{"version"}, []string{"HTTP_ADDR=nonsense"}, &out, io.Discard))
		require.True(t, strings.HasPrefix(out.String(), b.Name+" "), out.String())
		require.Contains(t, out.String(), "  go        go1.")
		require.Contains(t, out.String(), "  platform  "+runtime.GOOS+"/"+runtime.GOARCH)
	})
	for _, tc := range []struct {
		name  string
		ready error
	}{
		{"healthcheck when ready", nil},
		{"healthcheck when not ready", errors.New("schema at version 1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			env := []string{"HTTP_ADDR=" + ReadyServer(t, tc.ready)}
			err := b.Run(context.Background(), []string{"healthcheck"}, env, &out, io.Discard)
			if tc.ready == nil {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "503")
				require.ErrorContains(t, err, tc.ready.Error(), "the reason reaches the healthcheck log")
			}
			require.Empty(t, out.String(), "a healthcheck says nothing")
		})
	}
}

// helpAndREADMENameEveryVariable keeps --help and the README's configuration table the
// complete list of what the binary reads: the compose validation in e2e/deploy takes
// its variable names from --help, so a variable read but not documented would go
// unchecked there.
func (b Binary) helpAndREADMENameEveryVariable(t *testing.T) {
	var help bytes.Buffer
	require.NoError(t, b.Run(context.Background(), []string{"help"}, nil, &help, &help))
	readme, err := os.ReadFile(b.README)
	require.NoError(t, err)
	names := b.Settings.Names()
	require.NotEmpty(t, names)
	for _, name := range names {
		require.Regexp(t, regexp.MustCompile(`(?m)^  `+name+`\s`), help.String(), "%s reads %s but --help does not list it", b.Name, name)
		require.True(t, strings.Contains(string(readme), "`"+name+"`"), "%s reads %s but %s does not list it", b.Name, name, b.README)
	}
}

// helpJSONIsTheDeclarations: `help --json`, which README's configuration table is
// generated from, prints the declarations --help prints, defaults included.
func (b Binary) helpJSONIsTheDeclarations(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, b.Run(context.Background(), []string{"help", "--json"}, nil, &out, &out))
	var got envconf.Program
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "%s", out.String())
	require.Equal(t, b.Settings.Program(b.Name), got)
	var help bytes.Buffer
	require.NoError(t, b.Run(context.Background(), []string{"help"}, nil, &help, &help))
	flat := strings.Join(strings.Fields(help.String()), " ")
	for _, v := range got.Variables {
		if v.Default != "" {
			require.True(t, strings.Contains(flat, "default "+v.Default) || strings.Contains(flat, "default "+strconv.Quote(v.Default)),
				"--help and the JSON give %s one default", v.Name)
		}
	}
}

// ReadyServer serves /readyz, answering ready's error as the reason it is not ready
// (nil: ready), until the test ends, and returns its address for HTTP_ADDR.
func ReadyServer(t testing.TB, ready error) string {
	t.Helper()
	e := httpserver.New(slog.New(slog.DiscardHandler))
	httpserver.Health(e, func(context.Context) error { return ready })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// RequireOneProblem asserts that err is a configuration refused for one problem
// only, of variable, whose reason contains reason, and that it reads on one line.
func RequireOneProblem(t testing.TB, err error, variable, reason string) {
	t.Helper()
	var cfgErr *envconf.Error
	require.ErrorAs(t, err, &cfgErr)
	require.Len(t, cfgErr.Problems, 1, "%v", err)
	require.Equal(t, variable, cfgErr.Problems[0].Name)
	require.Contains(t, cfgErr.Problems[0].Reason, reason)
	require.NotContains(t, err.Error(), "\n", "one line")
}

// FreeAddr returns a loopback address with a port nothing listened on a moment ago:
// an HTTP_ADDR for a binary under test, or a destination that refuses connections.
func FreeAddr(t testing.TB) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// SecretFile writes content to a file of its own, readable by its owner only, that
// lasts until the test ends, and returns its path: the value of a *_FILE variable.
func SecretFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}
