package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// instructions returns a Dockerfile's instructions, one per entry, with continuation
// lines joined and comments dropped.
func instructions(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		body, more := strings.CutSuffix(line, `\`)
		cur.WriteString(strings.TrimSpace(body) + " ")
		if !more {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	return out
}

// goWork returns the go version and the module directories of go.work.
func goWork(t *testing.T, root string) (version string, modules []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(data))
	require.NotNil(t, m, "go.work has a go line")
	for _, use := range regexp.MustCompile(`(?m)^\s*(?:use\s+)?\./(\S+)\s*$`).FindAllStringSubmatch(string(data), -1) {
		modules = append(modules, use[1])
	}
	require.NotEmpty(t, modules)
	return m[1], modules
}

// TestDockerfilesBuildStaticNonRootImages reads the Dockerfile of every service that
// compose.yaml builds: the toolchain is the one go.work asks for, the binary is static,
// the final stage is distroless and runs as nonroot, its entrypoint is the binary the
// healthcheck calls, and the dependency layer copies every go.work module's go.mod.
func TestDockerfilesBuildStaticNonRootImages(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	goVersion, modules := goWork(t, root)
	p := project(t, "slack")
	for _, name := range []string{"finance", "logistics", "slack"} {
		svc := serviceConfig(t, p, name)
		ins := instructions(t, filepath.Join(root, svc.Build.Dockerfile))
		require.Contains(t, ins, "ARG GO_VERSION="+goVersion, "%s builds with the go.work toolchain", name)
		require.True(t, slices.ContainsFunc(ins, func(s string) bool {
			return strings.HasPrefix(s, "RUN ") && strings.Contains(s, "CGO_ENABLED=0 go build")
		}), "%s: a static binary", name)

		start := -1
		for i, s := range slices.Backward(ins) {
			if strings.HasPrefix(s, "FROM ") {
				start = i
				break
			}
		}
		require.GreaterOrEqual(t, start, 0, "%s has a FROM", name)
		final := ins[start:] // the final stage
		require.Regexp(t, `^FROM gcr\.io/distroless/static-debian\d+:nonroot$`, final[0], name)
		require.Contains(t, final, "USER nonroot:nonroot", name)
		entry := slices.IndexFunc(final, func(s string) bool { return strings.HasPrefix(s, "ENTRYPOINT ") })
		require.GreaterOrEqual(t, entry, 0, "%s has an entrypoint", name)
		if svc.HealthCheck != nil {
			require.Equal(t, `ENTRYPOINT ["`+svc.HealthCheck.Test[1]+`"]`, final[entry], "%s: the healthcheck runs the image's binary", name)
		}

		if slices.ContainsFunc(ins, func(s string) bool { return strings.Contains(s, "go mod download") }) {
			for _, mod := range modules {
				require.True(t, slices.ContainsFunc(ins, func(s string) bool { return strings.HasPrefix(s, "COPY "+mod+"/go.mod") }),
					"%s: go mod download in workspace mode needs %s/go.mod", name, mod)
			}
		}
	}
}
