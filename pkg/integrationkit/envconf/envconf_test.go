package envconf_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/envconf"
)

// sample is a small configuration exercising every kind of setting.
type sample struct {
	Addr     string
	Pool     int
	On       bool
	Interval time.Duration
	Steps    []time.Duration
	Token    string
	Keep     time.Duration
	Archive  time.Duration
	Link     string
}

func (c *sample) set() envconf.Set {
	return envconf.Set{
		Settings: []envconf.Setting{
			envconf.String(&c.Addr, "HTTP_ADDR", "127.0.0.1:8081", "listen address", envconf.HostPort),
			envconf.Int(&c.Pool, "DB_MAX_CONNS", 8, 1, 1000, "pool size"),
			envconf.Bool(&c.On, "DISPATCH_ENABLED", true, "run the dispatcher"),
			envconf.Duration(&c.Interval, "DISPATCH_INTERVAL", 5*time.Second, 100*time.Millisecond, "poll"),
			envconf.Durations(&c.Steps, "DISPATCH_BACKOFF", []time.Duration{5 * time.Second, 4 * time.Hour}, 50*time.Millisecond, "steps"),
			envconf.Required(envconf.Secret(envconf.String(&c.Token, "API_TOKENS", "", "tokens", nil)), "serve"),
			envconf.Duration(&c.Keep, "RETENTION_OUTBOX_AGE", 720*time.Hour, time.Hour, "keep"),
			envconf.Duration(&c.Archive, "RETENTION_ARCHIVE_AGE", 8760*time.Hour, time.Hour, "archive"),
			{Name: "DASHBOARD_URL", Default: "http://<HTTP_ADDR>/ops/", Help: "dashboard",
				DefaultFrom: func() string { return "http://" + c.Addr + "/ops/" },
				Parse: func(v string) error {
					if err := envconf.HTTPURL(v); err != nil {
						return err
					}
					c.Link = v
					return nil
				}},
		},
		Rules: []envconf.Rule{{Name: "RETENTION_ARCHIVE_AGE", Uses: []string{"RETENTION_OUTBOX_AGE"}, Check: func() error {
			if c.Archive < c.Keep {
				return errors.New("below RETENTION_OUTBOX_AGE")
			}
			return nil
		}}},
	}
}

func load(environ []string, command string) (sample, error) {
	var c sample
	err := c.set().Load(environ, command)
	return c, err
}

func TestDefaultsFillEverySetting(t *testing.T) {
	t.Parallel()
	c, err := load(nil, "migrate")
	require.NoError(t, err)
	require.Equal(t, sample{Addr: "127.0.0.1:8081", Pool: 8, On: true, Interval: 5 * time.Second,
		Steps: []time.Duration{5 * time.Second, 4 * time.Hour}, Keep: 720 * time.Hour, Archive: 8760 * time.Hour,
		Link: "http://127.0.0.1:8081/ops/"}, c)
}

func TestValuesAreParsedAndTrimmed(t *testing.T) {
	t.Parallel()
	c, err := load([]string{"HTTP_ADDR= :9000 ", "DB_MAX_CONNS=1000", "DISPATCH_ENABLED=false",
		"DISPATCH_INTERVAL=100ms", "DISPATCH_BACKOFF=50ms, 1s", "API_TOKENS=x", "DASHBOARD_URL=https://ops.example/"}, "serve")
	require.NoError(t, err)
	require.Equal(t, ":9000", c.Addr)
	require.Equal(t, 1000, c.Pool)
	require.False(t, c.On)
	require.Equal(t, 100*time.Millisecond, c.Interval)
	require.Equal(t, []time.Duration{50 * time.Millisecond, time.Second}, c.Steps)
	require.Equal(t, "https://ops.example/", c.Link)
}

// Each rule of Load, one bad setting at a time: the error names the variable, on
// one line.
func TestEveryRuleNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, variable, want string
		environ              []string
	}{
		{"not host:port", "HTTP_ADDR", "want host:port", []string{"HTTP_ADDR=abc"}},
		{"port out of range", "HTTP_ADDR", "port from 1 to 65535", []string{"HTTP_ADDR=:70000"}},
		{"named port", "HTTP_ADDR", "port from 1 to 65535", []string{"HTTP_ADDR=localhost:http"}},
		{"pool above the ceiling", "DB_MAX_CONNS", "1 to 1000", []string{"DB_MAX_CONNS=1000000"}},
		{"pool of zero", "DB_MAX_CONNS", "1 to 1000", []string{"DB_MAX_CONNS=0"}},
		{"not a boolean", "DISPATCH_ENABLED", "true or false", []string{"DISPATCH_ENABLED=maybe"}},
		{"not a duration", "DISPATCH_INTERVAL", "want a duration", []string{"DISPATCH_INTERVAL=soon"}},
		{"duration below the floor", "DISPATCH_INTERVAL", "below the floor of 100ms", []string{"DISPATCH_INTERVAL=1ns"}},
		{"step below the floor", "DISPATCH_BACKOFF", "step 2: 1ns is below the floor of 50ms", []string{"DISPATCH_BACKOFF=1s,1ns"}},
		{"required by the command", "API_TOKENS", "required by serve", []string{"API_TOKENS= "}},
		{"credentials in a URL", "DASHBOARD_URL", "credentials", []string{"DASHBOARD_URL=https://admin:pw@ops.example/"}},
		{"not an http URL", "DASHBOARD_URL", "absolute http(s) URL", []string{"DASHBOARD_URL=ops.example"}},
		{"rule across settings", "RETENTION_ARCHIVE_AGE", "below RETENTION_OUTBOX_AGE", []string{"RETENTION_ARCHIVE_AGE=24h"}},
		{"unknown name", "DISPATCH_BACKOF", "did you mean DISPATCH_BACKOFF?", []string{"DISPATCH_BACKOF=1s"}},
		{"transposed letters", "DISPATCH_INTERAVL", "did you mean DISPATCH_INTERVAL?", []string{"DISPATCH_INTERAVL=1s"}},
		{"unknown though empty", "DB_MAX_CONN", "did you mean DB_MAX_CONNS?", []string{"DB_MAX_CONN="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The first of a repeated name wins: API_TOKENS=x applies unless the case sets it.
			_, err := load(append(tc.environ, "API_TOKENS=x"), "serve")
			var cfgErr *envconf.Error
			require.ErrorAs(t, err, &cfgErr)
			require.Len(t, cfgErr.Problems, 1, "%v", err)
			require.Equal(t, tc.variable, cfgErr.Problems[0].Name)
			require.Contains(t, err.Error(), tc.variable+": ")
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n")
			require.NotContains(t, err.Error(), "pw", "credentials are never echoed")
		})
	}
}

func TestEveryProblemIsOnOneLine(t *testing.T) {
	t.Parallel()
	_, err := load([]string{"HTTP_ADDR=abc", "DISPATCH_BACKOFF=1ns", "BREAKER_TRESHOLD=5"}, "serve")
	require.EqualError(t, err, "invalid configuration: HTTP_ADDR: want host:port such as 127.0.0.1:8081 or :8081, "+
		`got "abc"; DISPATCH_BACKOFF: step 1: 1ns is below the floor of 50ms; API_TOKENS: required by serve`)
}

// A variable of a prefix the binary does not use, or of another program, is no
// business of Load's.
func TestForeignVariablesAreIgnored(t *testing.T) {
	t.Parallel()
	_, err := load([]string{"HTTP_PROXY=http://proxy:3128", "BREAKER_TRESHOLD=5", "PATH=/bin", "TEST_DATABASE_URL=x"}, "migrate")
	require.NoError(t, err)
}

func TestRequiredOnlyForItsCommand(t *testing.T) {
	t.Parallel()
	_, err := load(nil, "migrate")
	require.NoError(t, err)
	_, err = load(nil, "serve")
	require.ErrorContains(t, err, "API_TOKENS: required by serve")
}

// A rule is not checked when a setting it reads is already reported, and a derived
// default is not reported once its source was.
func TestNoSecondProblemFromTheSameCause(t *testing.T) {
	t.Parallel()
	_, err := load([]string{"RETENTION_OUTBOX_AGE=forever", "RETENTION_ARCHIVE_AGE=1h", "HTTP_ADDR=[::1"}, "migrate")
	var cfgErr *envconf.Error
	require.ErrorAs(t, err, &cfgErr)
	require.Len(t, cfgErr.Problems, 2, "%v", err)
	require.Equal(t, "HTTP_ADDR", cfgErr.Problems[0].Name)
	require.Equal(t, "RETENTION_OUTBOX_AGE", cfgErr.Problems[1].Name)
}

func TestSecretFromAFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte("clerk:from-the-file\n"), 0o600))

	c, err := load([]string{"API_TOKENS_FILE=" + path}, "serve")
	require.NoError(t, err)
	require.Equal(t, "clerk:from-the-file", c.Token, "the trailing newline is trimmed")

	_, err = load([]string{"API_TOKENS_FILE=" + path, "API_TOKENS=clerk:inline"}, "serve")
	require.EqualError(t, err, "invalid configuration: API_TOKENS: set API_TOKENS or API_TOKENS_FILE, not both")

	_, err = load([]string{"API_TOKENS_FILE=" + path + ".missing"}, "serve")
	require.ErrorContains(t, err, "API_TOKENS_FILE: open "+path+".missing: no such file or directory")

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = load([]string{"API_TOKENS_FILE=" + empty}, "serve")
	require.ErrorContains(t, err, "API_TOKENS: required by serve")
}

func TestInvalidIsAnError(t *testing.T) {
	t.Parallel()
	err := envconf.Invalid("DB_MAX_CONNS", "%d exceed the server's max_connections %d", 500, 100)
	var cfgErr *envconf.Error
	require.ErrorAs(t, err, &cfgErr)
	require.EqualError(t, err, "invalid configuration: DB_MAX_CONNS: 500 exceed the server's max_connections 100")
}

func TestHelpSaysDefaultsBoundsAndFiles(t *testing.T) {
	t.Parallel()
	var c sample
	help := c.set().Help()
	for _, line := range []string{
		"  DISPATCH_INTERVAL      poll (default 5s; at least 100ms)",
		"  DISPATCH_BACKOFF       steps (default 5s,4h; each at least 50ms)",
		"  DB_MAX_CONNS           pool size (default 8; 1 to 1000)",
		"  API_TOKENS             tokens (required by serve)",
		"  API_TOKENS_FILE        the file to read API_TOKENS from instead",
		"  DASHBOARD_URL          dashboard (default http://<HTTP_ADDR>/ops/)",
	} {
		require.Contains(t, help, line+"\n")
	}
	require.True(t, strings.HasPrefix(help, "Environment:\n"))
	require.Equal(t, []string{"HTTP_ADDR", "DB_MAX_CONNS", "DISPATCH_ENABLED", "DISPATCH_INTERVAL", "DISPATCH_BACKOFF",
		"API_TOKENS", "API_TOKENS_FILE", "RETENTION_OUTBOX_AGE", "RETENTION_ARCHIVE_AGE", "DASHBOARD_URL"}, c.set().Names())
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", 4 * time.Hour: "4h", 720 * time.Hour: "720h", 90 * time.Minute: "1h30m",
		100 * time.Millisecond: "100ms", 30 * time.Second: "30s", time.Hour + 30*time.Second: "1h0m30s",
	} {
		require.Equal(t, want, envconf.FormatDuration(d))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		require.Equal(t, d, back)
	}
}
