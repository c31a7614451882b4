package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unguardedOK are the only files outside pkg/integrationkit/egress that may make an
// outgoing call without egress.NewClient, each with the reason.
var unguardedOK = map[string]string{
	"pkg/integrationkit/httpserver/probe.go": "the healthcheck GETs the process's own /readyz on loopback, which the guard refuses",
}

// defaultCallers are the package-level names of net/http and slack-go that send with
// a client nobody configured (http.DefaultClient, or its transport).
var defaultCallers = map[string][]string{
	"net/http":                  {"DefaultClient", "DefaultTransport", "Get", "Head", "Post", "PostForm"},
	"github.com/slack-go/slack": {"PostWebhook", "PostWebhookContext"},
}

// unguarded lists, in one parsed file, every place that makes an outgoing call past
// the SSRF guard: a use of http.Client or http.Transport other than as a pointer
// type (a literal, new, a zero value in a variable or field) and any sender through
// the default client.
func unguarded(fset *token.FileSet, f *ast.File) []string {
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := defaultCallers[path]; !ok {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	pointee := map[*ast.SelectorExpr]bool{}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		if star, ok := n.(*ast.StarExpr); ok {
			if sel, ok := star.X.(*ast.SelectorExpr); ok {
				pointee[sel] = true
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || names[pkg.Name] == "" {
			return true
		}
		name := sel.Sel.Name
		switch {
		case names[pkg.Name] == "net/http" && (name == "Client" || name == "Transport") && !pointee[sel]:
			found = append(found, fset.Position(sel.Pos()).String()+": builds its own http."+name)
		case slices.Contains(defaultCallers[names[pkg.Name]], name):
			found = append(found, fset.Position(sel.Pos()).String()+": uses "+pkg.Name+"."+name)
		}
		return true
	})
	return found
}

func unguardedIn(t *testing.T, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	return unguarded(fset, f)
}

func TestUnguardedFindsEveryWayAroundTheGuard(t *testing.T) {
	t.Parallel()
	const head = "package x\nimport (\n\t\"net/http\"\n\t\"github.com/slack-go/slack\"\n\t\"handoff/pkg/integrationkit/egress\"\n)\n"
	cases := []struct {
		name, body string
		found      int
	}{
		{"client literal", `var c = &http.Client{}`, 1},
		{"client value", `var c = http.Client{Timeout: 1}`, 1},
		{"transport literal", `var tr = &http.Transport{}`, 1},
		{"client and transport", `var c = &http.Client{Transport: &http.Transport{}}`, 2},
		{"new", `var c = new(http.Client)`, 1},
		{"zero value", `var c http.Client`, 1},
		{"zero value field", `type s struct{ c http.Client }`, 1},
		{"default client", `var r, _ = http.DefaultClient.Do(nil)`, 1},
		{"default transport", `var rt = http.DefaultTransport`, 1},
		{"http.Get", `var r, _ = http.Get("http://x")`, 1},
		{"http.Head", `var r, _ = http.Head("http://x")`, 1},
		{"http.Post", `var r, _ = http.Post("http://x", "", nil)`, 1},
		{"http.PostForm", `var r, _ = http.PostForm("http://x", nil)`, 1},
		{"slack webhook on the default client", `var err = slack.PostWebhook("http://x", nil)`, 1},
		{"slack webhook with context on the default client", `var err = slack.PostWebhookContext(nil, "http://x", nil)`, 1},
		{"the guarded client", `var c *http.Client = egress.NewClient(nil, egress.ClientConfig{})`, 0},
		{"a client passed in", `func f(c *http.Client) (*http.Response, error) { return c.Get("http://x") }`, 0},
		{"a transport asserted", `func f(c *http.Client) bool { _, ok := c.Transport.(*http.Transport); return ok }`, 0},
		{"requests and handlers", `var r, _ = http.NewRequest(http.MethodGet, "http://x", nil); var h http.Handler`, 0},
		{"slack with a client of its own choosing", `var err = slack.PostWebhookCustomHTTPContext(nil, "http://x", nil, nil)`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := head + c.body + "\nvar _ = egress.NewClient\nvar _ = slack.New\nvar _ = http.StatusOK\n"
			require.Len(t, unguardedIn(t, src), c.found, c.body)
		})
	}
	t.Run("renamed import", func(t *testing.T) {
		t.Parallel()
		require.Len(t, unguardedIn(t, "package x\nimport nethttp \"net/http\"\nvar r, _ = nethttp.Get(\"http://x\")\n"), 1)
	})
	t.Run("another package named http", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, unguardedIn(t, "package x\nimport http \"example.com/http\"\nvar c = &http.Client{}\n"))
	})
}

// testHelper says whether a package directory holds test helpers (pgtest, outboxtest,
// financetest, …): packages only tests may import, as depguard holds every non-test
// file to, so their clients are test clients.
func testHelper(dir string) bool { return strings.HasSuffix(dir, "test") }

// Every outgoing call of finance, logistics and the kit goes through
// egress.NewClient: no other non-test file builds an http.Client or http.Transport
// or sends through net/http's default client, except the files in unguardedOK.
func TestEveryOutgoingCallIsGuarded(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..")
	allowed := map[string]bool{}
	var found []string
	fset := token.NewFileSet()
	for _, dir := range []string{"finance", "logistics", "pkg/integrationkit"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir() && (rel == "pkg/integrationkit/egress" || d.Name() == "testdata" || testHelper(d.Name())):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go"):
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			hits := unguarded(fset, f)
			if _, ok := unguardedOK[rel]; ok {
				allowed[rel] = len(hits) > 0
				return nil
			}
			found = append(found, hits...)
			return nil
		})
		require.NoError(t, err)
	}
	require.Empty(t, found, "build clients with egress.NewClient on the service's guard")
	for rel, reason := range unguardedOK {
		require.True(t, allowed[rel], "%s is allowed an unguarded call (%s) but makes none: drop it from unguardedOK", rel, reason)
	}
}
