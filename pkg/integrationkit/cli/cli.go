// Package cli reads a service binary's command line the same way in every service.
// Each command declares its flags once, with their help, and the usage printed for it
// is made from them. `--help` after any command, or `help <command>`, prints that
// command's usage to stdout and succeeds. A mistake (an unknown command or flag, a bad
// value, a missing or extra argument) is a *UsageError carrying the usage of the
// command it was made in, which Status prints to stderr with exit status 2. Flags may
// come before, between or after the positional arguments; `--` ends the flags.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Runner runs a command with its positional arguments, once its flags are parsed.
type Runner func(ctx context.Context, args []string) error

// Command is one command of a binary.
type Command struct {
	// Name is the words after the binary's name that select the command, such as
	// "outbox list". Commands sharing a first word form a group, whose usage lists them.
	Name string
	// Args names the positional arguments in the usage line, such as "<event-id>".
	Args string
	// MinArgs and MaxArgs bound how many positional arguments the command takes.
	MinArgs, MaxArgs int
	// Summary says in one line what the command does, in its group's list.
	Summary string
	// Help says what the command does, under its usage line (Summary when empty).
	Help string
	// Setup declares the command's flags on fs, each with its help, and returns what
	// runs the command once they are parsed. It must only declare: it also runs when
	// the usage is printed. Nil for a command without flags that only Run.
	Setup func(fs *flag.FlagSet) Runner
	// Run runs a command that has no flags (Setup nil).
	Run Runner
}

// Program is a binary and its commands.
type Program struct {
	// Name is the binary's name, such as "finance".
	Name string
	// Usage is the binary's usage, printed after a mistake in its first word.
	Usage string
	// Help is printed by `help`, `--help` or `-h` alone (Usage when empty).
	Help     string
	Commands []Command
}

// Call is a command line, parsed: either help to print, or a command to run.
type Call struct {
	// Name is the command's name; empty when Help is set.
	Name string
	// Help, when not empty, is the usage the command line asked for: print it to
	// stdout and run nothing.
	Help  string
	run   Runner
	args  []string
	usage string
}

// Run runs the command. A *UsageError it returns without a usage gets the command's.
func (c Call) Run(ctx context.Context) error {
	err := c.run(ctx, c.args)
	var ue *UsageError
	if errors.As(err, &ue) && ue.Usage == "" {
		ue.Command, ue.Usage = c.Name, c.usage
	}
	return err
}

// UsageError is a mistake on the command line. Status prints it followed by Usage and
// exits 2.
type UsageError struct {
	// Command is the command the mistake was made in; empty for the binary's first word.
	Command string
	Err     error
	// Usage is the usage of Command.
	Usage string
}

func (e *UsageError) Error() string {
	if e.Command == "" {
		return e.Err.Error()
	}
	return e.Command + ": " + e.Err.Error()
}

func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError for a mistake a command finds once its flags are
// parsed, such as a flag's value it cannot read; Call.Run adds the command's usage.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// BadUsage marks err, a refusal of something the command line said, as a *UsageError;
// nil stays nil.
func BadUsage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// ExitError asks for exit status Code instead of 1.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns err with exit status code; nil stays nil.
func Exit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// Status reports err on stderr as "<prog>: <err>", followed by the usage of the
// command for a *UsageError, and returns the exit status: 0 for nil, 2 for a
// *UsageError, the code of an *ExitError, else 1.
func Status(prog string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	var ue *UsageError
	var ee *ExitError
	switch {
	case errors.As(err, &ue):
		if ue.Usage != "" {
			fmt.Fprint(stderr, "\n"+ue.Usage)
		}
		return 2
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}

// Parse finds the command args names and parses its flags and arguments. A help
// request comes back as Call.Help; a mistake as a *UsageError.
func (p Program) Parse(args []string) (Call, error) {
	if len(args) > 0 && args[0] == "help" {
		if len(args) == 1 {
			return Call{Help: cmp.Or(p.Help, p.Usage)}, nil
		}
		args = append(slices.Clone(args[1:]), "--help")
	}
	if len(args) == 0 {
		return Call{}, &UsageError{Err: errors.New("no command given"), Usage: p.Usage}
	}
	cmd, n := p.find(args)
	if cmd == nil {
		return p.group(args)
	}
	fs := flag.NewFlagSet(p.Name+" "+cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.Run
	if cmd.Setup != nil {
		run = cmd.Setup(fs)
	}
	usage := p.usage(cmd, fs)
	bad := func(err error) (Call, error) {
		return Call{}, &UsageError{Command: cmd.Name, Err: err, Usage: usage}
	}
	pos, err := parseFlags(fs, args[n:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		return Call{Help: usage}, nil
	case err != nil:
		return bad(errors.New(singleDash.ReplaceAllString(err.Error(), "$1--$2")))
	case len(pos) < cmd.MinArgs:
		return bad(fmt.Errorf("missing %s", cmd.Args))
	case len(pos) > cmd.MaxArgs:
		return bad(fmt.Errorf("unexpected argument %q", pos[cmd.MaxArgs]))
	}
	return Call{Name: cmd.Name, run: run, args: pos, usage: usage}, nil
}

// find returns the command with the most words that args starts with, and how many.
func (p Program) find(args []string) (*Command, int) {
	var best *Command
	n := 0
	for i, c := range p.Commands {
		words := strings.Fields(c.Name)
		if len(words) > n && len(words) <= len(args) && slices.Equal(words, args[:len(words)]) {
			best, n = &p.Commands[i], len(words)
		}
	}
	return best, n
}

// group answers a command line that names no command: the usage of the group its
// first word names, asked for or after a mistake, or the binary's.
func (p Program) group(args []string) (Call, error) {
	var members []Command
	for _, c := range p.Commands {
		if first, _, _ := strings.Cut(c.Name, " "); first == args[0] {
			members = append(members, c)
		}
	}
	switch {
	case len(members) == 0 && isHelp(args[0]):
		return Call{Help: cmp.Or(p.Help, p.Usage)}, nil
	case len(members) == 0:
		return Call{}, &UsageError{Err: fmt.Errorf("unknown command %q", args[0]), Usage: p.Usage}
	}
	usage := p.groupUsage(args[0], members)
	switch {
	case len(args) == 1:
		return Call{}, &UsageError{Command: args[0], Err: errors.New("missing command"), Usage: usage}
	case isHelp(args[1]):
		return Call{Help: usage}, nil
	}
	return Call{}, &UsageError{Command: args[0], Err: fmt.Errorf("unknown command %q", args[1]), Usage: usage}
}

// singleDash finds the flag package's "-name" in its errors, which say "--name" as the
// usages do.
var singleDash = regexp.MustCompile(`(: |flag |for )-([A-Za-z])`)

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// parseFlags parses args with fs, flags before and after the positional arguments
// alike, and returns the positional ones; everything after `--` is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if k := len(args) - len(rest); k > 0 && args[k-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
