// Package envconf reads a binary's configuration from its environment once, at start:
// each variable is declared once, as a Setting with its name, default, help, parse
// and check, and Load reports every problem of one start in a single one-line Error
// that names the variables. The same declarations render the binary's --help.
//
// Beyond the values themselves, Load refuses a variable that shares a prefix with
// the declared ones but is not declared (a typo such as DISPATCH_BACKOF, answered
// with the closest declared name), and reads a Secret setting from NAME_FILE when
// that is set instead of NAME.
package envconf

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Setting declares one environment variable. The constructors (Duration, Int,
// String, …) fill Default, Bounds and Parse; a Setting literal suits other types.
type Setting struct {
	// Name is the variable, e.g. DISPATCH_BACKOFF.
	Name string
	// Default is the value used when the variable is unset or empty, written as it
	// would be in the environment; "" means none (Parse is not called).
	Default string
	// DefaultFrom, when set, computes the default from settings declared before this
	// one (they are parsed first); Default then only describes it in the help.
	DefaultFrom func() string
	// Help describes the variable; a newline starts a continuation line.
	Help string
	// Bounds states the limits Parse enforces, for the help ("at least 100ms").
	Bounds string
	// Secret settings may be read from the file named by NAME_FILE instead, and
	// their values never appear in a message.
	Secret bool
	// Required lists the commands that need a value, e.g. "serve".
	Required []string
	// Parse checks a value and stores it; its error becomes "NAME: <error>".
	Parse func(value string) error
}

// Secret marks s as a secret: it may come from NAME_FILE.
func Secret(s Setting) Setting {
	s.Secret = true
	return s
}

// Required marks s as needing a value for commands.
func Required(s Setting, commands ...string) Setting {
	s.Required = append(slices.Clip(s.Required), commands...)
	return s
}

// Rule is a check across settings, run once every setting has been parsed.
type Rule struct {
	// Name is the variable a violation is reported under.
	Name string
	// Uses lists the other variables the check reads; it is skipped when one of them,
	// or Name, is already reported invalid.
	Uses []string
	// Check returns the problem, or nil.
	Check func() error
}

// Set is the configuration of one binary: every variable it reads, and the rules
// across them.
type Set struct {
	Settings []Setting
	Rules    []Rule
}

// fileSuffix names the variable that holds the path of a secret's file.
const fileSuffix = "_FILE"

// Load parses environ ("NAME=value" entries, as os.Environ returns them) for command
// into the settings' destinations. It returns nil or an *Error listing every invalid,
// missing and unknown variable. Values are trimmed of surrounding white space, a
// secret's file content included (so its trailing newline); empty counts as unset.
func (s Set) Load(environ []string, command string) error {
	vars := parseEnviron(environ)
	var ps problems
	for _, st := range s.Settings {
		st.load(vars, command, &ps)
	}
	for _, r := range s.Rules {
		if !ps.reported(append([]string{r.Name}, r.Uses...)...) {
			ps.add(r.Name, r.Check())
		}
	}
	ps = append(ps, s.unknown(vars)...)
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}

// load reads, parses and checks one setting, adding what is wrong to ps. A default
// computed from other settings that fails is not reported once something else was:
// it failed because of them.
func (st Setting) load(vars map[string]string, command string, ps *problems) {
	value, ok := st.lookup(vars, ps)
	if !ok {
		return
	}
	if value == "" && slices.Contains(st.Required, command) {
		ps.add(st.Name, fmt.Errorf("required by %s", command))
		return
	}
	derived := false
	if value == "" {
		value = st.Default
		if st.DefaultFrom != nil {
			value, derived = st.DefaultFrom(), true
		}
	}
	if value == "" || st.Parse == nil {
		return
	}
	if err := st.Parse(value); err != nil && !(derived && len(*ps) > 0) {
		ps.add(st.Name, err)
	}
}

// lookup returns the setting's trimmed value, from NAME or, for a secret, from the
// file NAME_FILE names; false when that failed (and is in ps).
func (st Setting) lookup(vars map[string]string, ps *problems) (string, bool) {
	value := strings.TrimSpace(vars[st.Name])
	if !st.Secret {
		return value, true
	}
	fileVar := st.Name + fileSuffix
	path := strings.TrimSpace(vars[fileVar])
	switch {
	case path == "":
		return value, true
	case value != "":
		ps.add(st.Name, fmt.Errorf("set %s or %s, not both", st.Name, fileVar))
		return "", false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		ps.add(fileVar, err) // "open /run/secrets/x: no such file or directory"
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// Names returns every variable the set reads, NAME_FILE of each secret included, in
// declaration order.
func (s Set) Names() []string {
	var out []string
	for _, st := range s.Settings {
		out = append(out, st.Name)
		if st.Secret {
			out = append(out, st.Name+fileSuffix)
		}
	}
	return out
}

// parseEnviron maps "NAME=value" entries; the first of a repeated name wins, as in
// os.Getenv.
func parseEnviron(environ []string) map[string]string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if _, seen := vars[name]; !seen {
			vars[name] = value
		}
	}
	return vars
}
