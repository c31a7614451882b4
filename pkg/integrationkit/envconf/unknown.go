package envconf

import (
	"fmt"
	"slices"
	"strings"
)

// foreign are variables of other programs that share a prefix with a binary's own:
// Go's net/http reads HTTP_PROXY.
var foreign = []string{"HTTP_PROXY"}

// unknown returns a problem for every variable in vars that starts with the prefix
// of a declared name (up to and including its first '_': DISPATCH_, DB_, …) but is
// not declared itself, naming the closest declared name of that prefix: a typo would
// otherwise leave the default in force without a word.
func (s Set) unknown(vars map[string]string) []Problem {
	known := s.Names()
	var out []Problem
	for name := range vars {
		p := prefix(name)
		if p == "" || slices.Contains(known, name) || slices.Contains(foreign, name) {
			continue
		}
		var siblings []string
		for _, k := range known {
			if prefix(k) == p {
				siblings = append(siblings, k)
			}
		}
		if len(siblings) == 0 {
			continue
		}
		out = append(out, Problem{Name: name, Reason: fmt.Sprintf("unknown variable; did you mean %s?", closest(name, siblings))})
	}
	slices.SortFunc(out, func(a, b Problem) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// prefix returns name up to and including its first '_', or "".
func prefix(name string) string {
	i := strings.IndexByte(name, '_')
	if i <= 0 {
		return ""
	}
	return name[:i+1]
}

// closest returns the candidate at the least edit distance from name, the first
// declared on a tie.
func closest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if d := distance(name, c); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b: insertions,
// deletions, substitutions and transpositions of adjacent bytes, each counting one
// (BREAKER_TRESHOLD is one from BREAKER_THRESHOLD, DISPATCH_BACKOFF one from
// DISPATCH_BAKCOFF).
func distance(a, b string) int {
	// d[i][j] is the distance of a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
