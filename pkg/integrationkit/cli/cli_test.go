package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/cli"
)

// ran records what a command of testProgram ran with.
type ran struct {
	name   string
	args   []string
	reason string
	limit  int
}

func testProgram(got *ran) cli.Program {
	withFlags := func(name string) func(fs *flag.FlagSet) cli.Runner {
		return func(fs *flag.FlagSet) cli.Runner {
			reason := fs.String("reason", "", "why (`text`, required)")
			limit := fs.Int("limit", 50, "most events")
			fs.Bool("dry-run", false, "only count")
			return func(_ context.Context, args []string) error {
				*got = ran{name: name, args: args, reason: *reason, limit: *limit}
				if *limit > 100 {
					return cli.Usagef("--limit %d is over 100", *limit)
				}
				return nil
			}
		}
	}
	return cli.Program{
		Name:  "svc",
		Usage: "svc — a service\n",
		Help:  "svc — a service\nEnvironment: …\n",
		Commands: []cli.Command{
			{Name: "serve", Summary: "serve until SIGTERM", Run: func(context.Context, []string) error {
				*got = ran{name: "serve"}
				return nil
			}},
			{Name: "outbox list", Summary: "events, newest first", Setup: withFlags("outbox list")},
			{Name: "outbox retry", Args: "[<event-id>]", MaxArgs: 1, Summary: "replay events",
				Help: "Replay one event, or every event the flags select.", Setup: withFlags("outbox retry")},
			{Name: "outbox show", Args: "<event-id>", MinArgs: 1, MaxArgs: 1, Summary: "one event",
				Setup: withFlags("outbox show")},
		},
	}
}

func TestParseRunsTheCommandNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want ran
	}{
		{[]string{"serve"}, ran{name: "serve"}},
		{[]string{"outbox", "list"}, ran{name: "outbox list", limit: 50}},
		{[]string{"outbox", "retry", "e1", "--reason=why"}, ran{name: "outbox retry", args: []string{"e1"}, reason: "why", limit: 50}},
		{[]string{"outbox", "retry", "--reason", "why", "e1", "--limit=3"},
			ran{name: "outbox retry", args: []string{"e1"}, reason: "why", limit: 3}},
		{[]string{"outbox", "show", "--limit=2", "--", "-e1"}, ran{name: "outbox show", args: []string{"-e1"}, limit: 2}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var got ran
			call, err := testProgram(&got).Parse(tc.args)
			require.NoError(t, err)
			require.Empty(t, call.Help)
			require.NoError(t, call.Run(context.Background()))
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want.name, call.Name)
		})
	}
}

// --help anywhere in a command's flags, or help before it, asks for its usage; alone,
// for the binary's help.
func TestParseAnswersHelp(t *testing.T) {
	t.Parallel()
	retry := "Usage: svc outbox retry [<event-id>] [flags]\n\n" +
		"Replay one event, or every event the flags select.\n\n" +
		"Flags:\n" +
		"  --dry-run        only count\n" +
		"  --limit=<int>    most events (default 50)\n" +
		"  --reason=<text>  why (text, required)\n"
	group := "Usage: svc outbox <command> [flags] [arguments]\n\nCommands:\n" +
		"  list   events, newest first\n" +
		"  retry  replay events\n" +
		"  show   one event\n\n" +
		"Run \"svc outbox <command> --help\" for a command's flags and arguments.\n"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "svc — a service\nEnvironment: …\n"},
		{[]string{"--help"}, "svc — a service\nEnvironment: …\n"},
		{[]string{"-h"}, "svc — a service\nEnvironment: …\n"},
		{[]string{"outbox", "retry", "--help"}, retry},
		{[]string{"outbox", "retry", "e1", "--reason=x", "-h"}, retry},
		{[]string{"help", "outbox", "retry"}, retry},
		{[]string{"outbox", "--help"}, group},
		{[]string{"help", "outbox"}, group},
		{[]string{"serve", "--help"}, "Usage: svc serve\n\nserve until SIGTERM\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			call, err := testProgram(new(ran)).Parse(tc.args)
			require.NoError(t, err)
			require.Equal(t, tc.want, call.Help)
		})
	}
}

// Every mistake is a *UsageError naming the command it was made in, with that
// command's usage; Status prints both and exits 2.
func TestMistakesAreUsageErrorsOfTheirCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args      []string
		msg       string
		usageHead string
	}{
		{nil, "no command given", "svc — a service\n"},
		{[]string{"fly"}, `unknown command "fly"`, "svc — a service\n"},
		{[]string{"outbox"}, "outbox: missing command", "Usage: svc outbox <command>"},
		{[]string{"outbox", "explode"}, `outbox: unknown command "explode"`, "Usage: svc outbox <command>"},
		{[]string{"serve", "now"}, `serve: unexpected argument "now"`, "Usage: svc serve\n"},
		{[]string{"serve", "--port=1"}, "serve: flag provided but not defined: --port", "Usage: svc serve\n"},
		{[]string{"outbox", "list", "--nope"}, "outbox list: flag provided but not defined: --nope", "Usage: svc outbox list [flags]\n"},
		{[]string{"outbox", "list", "--limit=many"}, `outbox list: invalid value "many" for flag --limit: parse error`,
			"Usage: svc outbox list [flags]\n"},
		{[]string{"outbox", "list", "--reason"}, "outbox list: flag needs an argument: --reason", "Usage: svc outbox list [flags]\n"},
		{[]string{"outbox", "show"}, "outbox show: missing <event-id>", "Usage: svc outbox show <event-id> [flags]\n"},
		{[]string{"outbox", "retry", "a", "b"}, `outbox retry: unexpected argument "b"`, "Usage: svc outbox retry [<event-id>] [flags]\n"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			_, err := testProgram(new(ran)).Parse(tc.args)
			var ue *cli.UsageError
			require.ErrorAs(t, err, &ue)
			require.EqualError(t, err, tc.msg)
			require.True(t, strings.HasPrefix(ue.Usage, tc.usageHead), ue.Usage)
			var stderr bytes.Buffer
			require.Equal(t, 2, cli.Status("svc", err, &stderr))
			require.Equal(t, "svc: "+tc.msg+"\n\n"+ue.Usage, stderr.String())
		})
	}
}

// A mistake a command finds itself (Usagef, BadUsage) gets the command's usage too.
func TestRunFillsInTheUsageOfItsCommand(t *testing.T) {
	t.Parallel()
	call, err := testProgram(new(ran)).Parse([]string{"outbox", "list", "--limit=101"})
	require.NoError(t, err)
	err = call.Run(context.Background())
	var stderr bytes.Buffer
	require.Equal(t, 2, cli.Status("svc", err, &stderr))
	require.True(t, strings.HasPrefix(stderr.String(),
		"svc: outbox list: --limit 101 is over 100\n\nUsage: svc outbox list [flags]\n"), stderr.String())
	require.NoError(t, cli.BadUsage(nil))
	require.ErrorAs(t, fmt.Errorf("wrapped: %w", cli.BadUsage(errors.New("bad"))), new(*cli.UsageError))
}

func TestStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("database unreachable"), 1, "svc: database unreachable\n"},
		{cli.Exit(2, errors.New("could not reconcile")), 2, "svc: could not reconcile\n"},
		{fmt.Errorf("run: %w", cli.Exit(3, errors.New("odd"))), 3, "svc: run: odd\n"},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		require.Equal(t, tc.code, cli.Status("svc", tc.err, &stderr), "%v", tc.err)
		require.Equal(t, tc.stderr, stderr.String())
	}
	require.NoError(t, cli.Exit(2, nil))
}
