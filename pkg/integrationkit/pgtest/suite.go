package pgtest

import "testing"

// Case is one named subtest of a suite, such as a conformance suite; Run takes the
// state (a database and what works on it) that the suite's set-up gives each case.
type Case[S any] struct {
	Name string
	Run  func(t *testing.T, s S)
}

// RunParallel runs each case as a parallel subtest of t on state of its own from
// setup, typically over a fresh database, so that no two cases share rows.
func RunParallel[S any](t *testing.T, setup func(t *testing.T) S, cases []Case[S]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Run(t, setup(t))
		})
	}
}
