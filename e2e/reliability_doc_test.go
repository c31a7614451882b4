package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/reliability.md names, for every row of the reliability matrix, the tests that
// prove it as `path: TestName[/subtest]`. Every row A1…G8 is there, and every test it
// names exists in the file it names, so the document cannot drift from the code.
func TestReliabilityDocNamesTestsThatExist(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reliability.md"))
	require.NoError(t, err)
	rows := regexp.MustCompile(`(?m)^- \*\*([A-G][0-9]+)\*\* `).FindAllStringSubmatch(string(doc), -1)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r[1]] = true
	}
	for letter, last := range map[string]int{"A": 7, "B": 10, "C": 14, "D": 11, "E": 12, "F": 3, "G": 8} {
		for n := 1; n <= last; n++ {
			require.True(t, seen[letter+strconv.Itoa(n)], "row %s%d is missing", letter, n)
		}
	}
	refs := regexp.MustCompile("`([a-zA-Z0-9_./-]+_test\\.go): ((?:Test|Fuzz|Example)[A-Za-z0-9_]*)").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, refs)
	for _, ref := range refs {
		if ref[1] == "path/to/file_test.go" { // the legend's example
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, ref[1]))
		require.NoError(t, err, "%s names a file that does not exist", ref[0])
		require.True(t, strings.Contains(string(src), "func "+ref[2]+"("), "%s: no func %s in %s", ref[0], ref[2], ref[1])
	}
}
