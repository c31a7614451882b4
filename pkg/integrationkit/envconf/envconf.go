// Package envconf reads configuration from environment variables once, at start-up,
// collecting every invalid value as an error that names the variable.
package envconf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Env reads variables through a lookup function and remembers what was invalid.
type Env struct {
	lookup func(string) (string, bool)
	errs   []error
}

// New reads from lookup; nil means the process environment.
func New(lookup func(string) (string, bool)) *Env {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return &Env{lookup: lookup}
}

// FromMap reads from a fixed map, for tests.
func FromMap(m map[string]string) *Env {
	return New(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func (e *Env) get(name string) (string, bool) {
	v, ok := e.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Fail records an invalid value of name.
func (e *Env) Fail(name, format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf("invalid %s: %s", name, fmt.Sprintf(format, args...)))
}

// String returns the value of name, or def when unset or empty.
func (e *Env) String(name, def string) string {
	if v, ok := e.get(name); ok {
		return v
	}
	return def
}

// Int returns a positive integer, or def when unset.
func (e *Env) Int(name string, def int) int {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.Fail(name, "want a positive integer, got %q", v)
		return def
	}
	return n
}

// Bool returns a boolean (true/false/1/0), or def when unset.
func (e *Env) Bool(name string, def bool) bool {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.Fail(name, "want true or false, got %q", v)
		return def
	}
	return b
}

// Duration returns a positive Go duration ("5s", "30m"), or def when unset.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.Fail(name, "want a positive duration such as 5s, got %q", v)
		return def
	}
	return d
}

// Durations returns a comma-separated list of positive durations, or def when unset.
func (e *Env) Durations(name string, def []time.Duration) []time.Duration {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	var out []time.Duration
	for part := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			e.Fail(name, "want positive durations separated by commas, got %q", v)
			return def
		}
		out = append(out, d)
	}
	return out
}

// Err returns every recorded problem, or nil.
func (e *Env) Err() error { return errors.Join(e.errs...) }
