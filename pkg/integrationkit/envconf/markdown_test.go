package envconf_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/envconf"
)

// Two binaries' tables: the variables both read are one row each, with what differs
// named by binary.
func ExampleMarkdown() {
	var api, worker struct {
		Addr  string
		Token string
		Level string
		Every time.Duration
	}
	apiSet := envconf.Set{Settings: []envconf.Setting{
		envconf.String(&api.Addr, "HTTP_ADDR", "127.0.0.1:8081", "listen address", envconf.HostPort),
		envconf.Required(envconf.Secret(envconf.String(&api.Token, "API_TOKEN", "", "bearer token", nil)), "serve"),
		envconf.String(&api.Level, "LOG_LEVEL", "info", "debug, info, warn or error", nil),
	}}
	workerSet := envconf.Set{Settings: []envconf.Setting{
		envconf.String(&worker.Addr, "HTTP_ADDR", "127.0.0.1:8082", "listen address", envconf.HostPort),
		envconf.String(&worker.Level, "LOG_LEVEL", "info", "debug, info, warn or error", nil),
		envconf.Duration(&worker.Every, "POLL_INTERVAL", 5*time.Second, 100*time.Millisecond,
			"how often to poll; keep it below API_TOKEN's lifetime"),
	}}
	fmt.Print(envconf.Markdown(apiSet.Program("api"), workerSet.Program("worker")))
	// Output:
	// | variable | read by | default | meaning |
	// |---|---|---|---|
	// | `HTTP_ADDR` | both | api: `127.0.0.1:8081`<br>worker: `127.0.0.1:8082` | listen address |
	// | `API_TOKEN` | api | none | bearer token (required by serve). `API_TOKEN_FILE` may name a file holding it instead |
	// | `LOG_LEVEL` | both | `info` | debug, info, warn or error |
	// | `POLL_INTERVAL` | worker | `5s` | how often to poll; keep it below `API_TOKEN`'s lifetime (at least 100ms) |
}

func TestMarkdownKeepsCellsPlainText(t *testing.T) {
	t.Parallel()
	var s, derived string
	set := envconf.Set{Settings: []envconf.Setting{
		envconf.String(&s, "WEBHOOK_SECRET", "", "whsec_<base64>, several | separated, *not* `quoted`", nil),
		{Name: "DASHBOARD_URL", Default: "http://<HTTP_ADDR>/ops/ of WEBHOOK_SECRET", DefaultFrom: func() string { return derived },
			Help: "a page\nfor operators"},
		envconf.String(&s, "SCHEDULE", "0 3 * * *", "cron spec | a|b", nil),
	}}
	table := envconf.Markdown(set.Program("one"))
	require.Contains(t, table, "| `WEBHOOK_SECRET` | one | none | whsec_\\<base64>, several \\| separated, \\*not\\* \\`quoted\\` |")
	require.Contains(t, table, "| `DASHBOARD_URL` | one | http://\\<HTTP_ADDR>/ops/ of `WEBHOOK_SECRET` | a page for operators |",
		"a derived default is text; a newline in help is a space")
	require.Contains(t, table, "| `SCHEDULE` | one | `0 3 * * *` | cron spec \\| a\\|b |")
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		require.Equal(t, 5, strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"), "four cells: %s", line)
	}
}

// Program is what a binary prints for generated documentation: it survives JSON.
func TestProgramRoundTripsThroughJSON(t *testing.T) {
	t.Parallel()
	c := &sample{}
	want := c.set().Program("finance")
	require.Len(t, want.Variables, len(c.set().Settings))
	data, err := json.Marshal(want)
	require.NoError(t, err)
	var got envconf.Program
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, want, got)
	require.Equal(t, envconf.Markdown(want), envconf.Markdown(got))

	byName := map[string]envconf.Variable{}
	for _, v := range got.Variables {
		byName[v.Name] = v
	}
	require.Equal(t, envconf.Variable{Name: "API_TOKENS", Help: "tokens", Secret: true, Required: []string{"serve"}}, byName["API_TOKENS"])
	require.Equal(t, envconf.Variable{Name: "DISPATCH_INTERVAL", Default: "5s", Help: "poll", Bounds: "at least 100ms"}, byName["DISPATCH_INTERVAL"])
	require.True(t, byName["DASHBOARD_URL"].Derived)
}
