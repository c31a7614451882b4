package envconf

import (
	"fmt"
	"slices"
	"strings"
)

// Error is every problem of one start. Its message is one line, "invalid
// configuration: NAME: reason; NAME: reason", so a binary that prints it and exits
// says everything at once.
type Error struct {
	Problems []Problem
}

// Problem is one invalid, missing or unknown variable.
type Problem struct {
	Name   string
	Reason string
}

// Error renders every problem on one line.
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Name + ": " + strings.Join(strings.Fields(p.Reason), " ")
	}
	return "invalid configuration: " + strings.Join(parts, "; ")
}

// Invalid returns an *Error of one problem, for a check that cannot run in Load: one
// that needs the database, say.
func Invalid(name, format string, args ...any) error {
	return &Error{Problems: []Problem{{Name: name, Reason: fmt.Sprintf(format, args...)}}}
}

// problems collects what Load finds, in the order it finds it.
type problems []Problem

// add records err against name, when err is not nil.
func (ps *problems) add(name string, err error) {
	if err != nil {
		*ps = append(*ps, Problem{Name: name, Reason: err.Error()})
	}
}

// reported reports whether any of names already has a problem.
func (ps problems) reported(names ...string) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return slices.Contains(names, p.Name) })
}
