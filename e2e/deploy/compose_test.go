// Package deploy checks compose.yaml and the images it builds without a Docker engine:
// the file is loaded by the Compose specification's own Go loader (the one docker
// compose uses), its settings are compared with what the binaries read, and the real
// binaries are booted on them.
package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// binaryOf names the handoff binary each application service of compose.yaml runs.
var binaryOf = map[string]string{"finance": "finance", "finance-2": "finance", "logistics": "logistics"}

// repoRoot is the monorepo root, where compose.yaml lives.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// generatedSecrets runs deploy/gen-secrets.sh, the documented way to make the files
// compose.yaml mounts as secrets, into a fresh directory, and returns it with each
// file's content (trailing newline trimmed) by name.
func generatedSecrets(t testing.TB) (dir string, secrets map[string]string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "secrets")
	out, err := exec.Command("bash", filepath.Join(repoRoot(t), "deploy", "gen-secrets.sh"), dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	secrets = map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		secrets[e.Name()] = strings.TrimSpace(string(data))
	}
	require.NotEmpty(t, secrets)
	return dir, secrets
}

// project loads compose.yaml as `docker compose` would, without a .env and with the
// given profiles active; nothing of this process's environment leaks in.
func project(t testing.TB, profiles ...string) *types.Project {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(nil), cli.WithProfiles(profiles))
	require.NoError(t, err)
	p, err := opts.LoadProject(context.Background())
	require.NoError(t, err)
	return p
}

// serviceConfig is the service called name in p.
func serviceConfig(t testing.TB, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, err := p.GetService(name)
	require.NoError(t, err)
	return svc
}

// environment is the resolved environment of one service.
func environment(t testing.TB, p *types.Project, service string) map[string]string {
	t.Helper()
	svc := serviceConfig(t, p, service)
	env := map[string]string{}
	for k, v := range svc.Environment {
		require.NotNil(t, v, "%s: %s has no value", service, k)
		env[k] = *v
	}
	return env
}

// mounted maps the path inside a service's container of each secret it mounts to the
// secret's file name (deploy/gen-secrets.sh writes one file per name).
func mounted(t testing.TB, p *types.Project, service string) map[string]string {
	t.Helper()
	svc := serviceConfig(t, p, service)
	out := map[string]string{}
	for _, s := range svc.Secrets {
		def, ok := p.Secrets[s.Source]
		require.True(t, ok, "%s mounts secret %s, which compose.yaml does not declare", service, s.Source)
		target := s.Target
		if target == "" {
			target = "/run/secrets/" + s.Source
		}
		out[target] = filepath.Base(def.File)
	}
	return out
}

// secretOf returns the content of the secret a service's variable names by its
// container path (NAME_FILE=/run/secrets/…), as deploy/gen-secrets.sh made it.
func secretOf(t testing.TB, p *types.Project, service, variable string, secrets map[string]string) string {
	t.Helper()
	path, ok := environment(t, p, service)[variable]
	require.True(t, ok, "%s sets %s", service, variable)
	file, ok := mounted(t, p, service)[path]
	require.True(t, ok, "%s: %s=%s is a secret the service mounts", service, variable, path)
	value, ok := secrets[file]
	require.True(t, ok, "deploy/gen-secrets.sh writes %s", file)
	return value
}

func TestComposeLoadsWithoutAnEnvFile(t *testing.T) {
	t.Parallel()
	p := project(t)
	require.ElementsMatch(t, []string{"postgres", "logistics", "finance", "finance-2"}, p.ServiceNames())
	require.Equal(t, []string{"slack"}, p.DisabledServiceNames(), "the Slack stand-in is optional")
	fin := environment(t, p, "finance")
	require.Empty(t, fin["DISPATCH_MODE"], "without .env, finance's own default delivery mode applies")
	require.NotContains(t, fin, "DISPATCH_CONCURRENCY", "its default follows the mode")

	withSlack := project(t, "slack")
	require.Contains(t, withSlack.ServiceNames(), "slack")
	allow := strings.FieldsFunc(environment(t, withSlack, "finance")["OUTBOUND_ALLOW"], func(r rune) bool { return r == ',' || r == ' ' })
	require.Contains(t, allow, "slack:8080", "the SSRF guard lets pages reach the stand-in at SLACK_WEBHOOK_URL=http://slack:8080/…")
}

// TestComposeTakesEverySecretFromAFile: every secret a binary reads reaches its
// container as a file (NAME_FILE=/run/secrets/…), never in the environment, where
// `docker inspect` and child processes see it; the files are the ones
// deploy/gen-secrets.sh writes into .secrets/, which git and image builds ignore.
func TestComposeTakesEverySecretFromAFile(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	_, secrets := generatedSecrets(t)
	p := project(t, "slack")

	var declared []string
	for name, def := range p.Secrets {
		require.Equal(t, filepath.Join(root, ".secrets", name), def.File, "secret %s is a file in .secrets/", name)
		require.Contains(t, secrets, name, "deploy/gen-secrets.sh writes the secret %s", name)
		declared = append(declared, name)
	}
	for name := range secrets {
		require.Contains(t, declared, name, "deploy/gen-secrets.sh writes %s, which compose.yaml does not use", name)
	}

	for service, bin := range binaryOf {
		env := environment(t, p, service)
		for _, v := range declarations(t, bin).Variables {
			if !v.Secret || leftToDefaults[bin][v.Name] != "" {
				continue // not a secret, or one compose leaves unset (e.g. no trace collector)
			}
			require.NotContains(t, env, v.Name, "%s: %s comes from a file, not the environment", service, v.Name)
			secretOf(t, p, service, v.Name+"_FILE", secrets)
		}
	}
	pg := environment(t, p, "postgres")
	for _, name := range []string{"POSTGRES_PASSWORD", "FINANCE_DB_PASSWORD", "LOGISTICS_DB_PASSWORD"} {
		require.NotContains(t, pg, name, "postgres: %s comes from a file", name)
		require.NotEmpty(t, secretOf(t, p, "postgres", name+"_FILE", secrets))
	}

	for _, ignore := range []string{".gitignore", ".dockerignore"} {
		data, err := os.ReadFile(filepath.Join(root, ignore))
		require.NoError(t, err)
		require.Contains(t, strings.Fields(string(data)), ".secrets/", "%s keeps the secrets out", ignore)
	}
}

// TestComposeServicesRunHardened: read-only, without capabilities, within limits of
// CPU, memory and processes, with rotated logs; PostgreSQL stops with a fast shutdown
// and time for its checkpoint.
func TestComposeServicesRunHardened(t *testing.T) {
	t.Parallel()
	p := project(t, "slack")
	root := repoRoot(t)
	for _, name := range []string{"finance", "finance-2", "logistics", "slack"} {
		svc := serviceConfig(t, p, name)
		require.True(t, svc.ReadOnly, "%s: read-only root filesystem", name)
		require.Equal(t, []string{"ALL"}, svc.CapDrop, "%s: no capabilities", name)
		require.Contains(t, svc.SecurityOpt, "no-new-privileges:true", name)
		require.NotNil(t, svc.Build, "%s is built from the repository", name)
		require.Equal(t, root, svc.Build.Context, "%s: the build context is the repository root (go.work spans it)", name)
		require.FileExists(t, filepath.Join(root, svc.Build.Dockerfile), name)
	}
	for _, name := range p.ServiceNames() {
		svc := serviceConfig(t, p, name)
		require.NotNil(t, svc.Logging, "%s: logging", name)
		require.Equal(t, "json-file", svc.Logging.Driver, "%s logs to rotated files", name)
		require.NotEmpty(t, svc.Logging.Options["max-size"], "%s: a log file's size is bounded", name)
		require.NotEmpty(t, svc.Logging.Options["max-file"], "%s: the number of log files is bounded", name)

		require.NotNil(t, svc.Deploy, "%s: resource limits", name)
		limits := svc.Deploy.Resources.Limits
		require.NotNil(t, limits, "%s: resource limits", name)
		require.Positive(t, float64(limits.NanoCPUs), "%s: CPU limit", name)
		require.Positive(t, int64(limits.MemoryBytes), "%s: memory limit", name)
		require.Positive(t, limits.Pids, "%s: process limit", name)
	}
	for name, bin := range binaryOf {
		svc := serviceConfig(t, p, name)
		require.NotNil(t, svc.HealthCheck, name)
		require.Equal(t, types.HealthCheckTest{"CMD", "/usr/local/bin/" + bin, "healthcheck"}, svc.HealthCheck.Test, name)
		require.Equal(t, types.ServiceConditionHealthy, svc.DependsOn["postgres"].Condition, "%s waits for PostgreSQL", name)
		goLimit := parseBytes(t, environment(t, p, name)["GOMEMLIMIT"])
		require.Less(t, goLimit, int64(svc.Deploy.Resources.Limits.MemoryBytes)*9/10,
			"%s: the Go heap's soft limit leaves room below the container's memory limit", name)
	}

	pg := serviceConfig(t, p, "postgres")
	require.Equal(t, "SIGINT", pg.StopSignal, "PostgreSQL stops with a fast shutdown")
	require.NotNil(t, pg.StopGracePeriod)
	require.GreaterOrEqual(t, time.Duration(*pg.StopGracePeriod), time.Minute, "time for the shutdown checkpoint")
	require.Greater(t, int64(pg.Deploy.Resources.Limits.Pids), int64(maxConnections(t, pg)),
		"PostgreSQL runs a process per connection")
	for name := range binaryOf {
		svc := serviceConfig(t, p, name)
		require.NotNil(t, svc.StopGracePeriod, name)
		require.Greater(t, *pg.StopGracePeriod, *svc.StopGracePeriod, "PostgreSQL outlasts %s's drain", name)
	}
}

// maxConnections reads -c max_connections=N from PostgreSQL's command.
func maxConnections(t testing.TB, pg types.ServiceConfig) int {
	t.Helper()
	i := slices.IndexFunc(pg.Command, func(a string) bool { return strings.HasPrefix(a, "max_connections=") })
	require.GreaterOrEqual(t, i, 0, "postgres sets max_connections")
	n, err := strconv.Atoi(strings.TrimPrefix(pg.Command[i], "max_connections="))
	require.NoError(t, err)
	return n
}

// parseBytes reads a GOMEMLIMIT value such as 320MiB.
func parseBytes(t testing.TB, v string) int64 {
	t.Helper()
	for _, u := range []struct {
		suffix string
		scale  int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			i, err := strconv.ParseInt(n, 10, 64)
			require.NoError(t, err, v)
			return i * u.scale
		}
	}
	t.Fatalf("GOMEMLIMIT %q: want a number of B, KiB, MiB or GiB", v)
	return 0
}

// TestComposeStartsTheDatabasesTheServicesUse runs the PostgreSQL init script, with a
// stand-in psql, on the secrets postgres mounts, and checks that it creates each
// service's database for the role and password in that service's DATABASE_URL.
func TestComposeStartsTheDatabasesTheServicesUse(t *testing.T) {
	t.Parallel()
	_, secrets := generatedSecrets(t)
	p := project(t)
	pg := serviceConfig(t, p, "postgres")
	require.Equal(t, "postgres:15", pg.Image)
	var script string
	for _, v := range pg.Volumes {
		if strings.HasPrefix(v.Target, "/docker-entrypoint-initdb.d/") {
			script = v.Source
		}
	}
	require.NotEmpty(t, script, "an init script creates the databases")
	info, err := os.Stat(script)
	require.NoError(t, err)
	require.NotZero(t, info.Mode()&0o111, "the postgres image runs (not sources) an executable init script")
	sql, err := os.ReadFile(script)
	require.NoError(t, err)

	// The script as the image runs it: the *_FILE variables point at the secret files.
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "psql"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755))
	dir := t.TempDir()
	env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	for k := range environment(t, p, "postgres") {
		if name, ok := strings.CutSuffix(k, "_FILE"); ok {
			path := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(path, []byte(secretOf(t, p, "postgres", k, secrets)+"\n"), 0o600))
			env = append(env, k+"="+path)
		}
	}
	cmd := exec.Command(script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	args := strings.Split(string(out), "\n")

	for name := range binaryOf {
		dbURL := parseURL(t, secretOf(t, p, name, "DATABASE_URL_FILE", secrets))
		require.Equal(t, "postgres", dbURL.Hostname(), "%s connects to the postgres service", name)
		db, user := strings.TrimPrefix(dbURL.Path, "/"), dbURL.User.Username()
		require.Contains(t, string(sql), "CREATE DATABASE "+db+" OWNER "+user+";", "%s: the init script creates its database", name)
		password, _ := dbURL.User.Password()
		require.Contains(t, args, user+"_password="+password, "%s logs in with the password the init script set", name)
	}
}

func TestComposeWiresFinanceToLogistics(t *testing.T) {
	t.Parallel()
	_, secrets := generatedSecrets(t)
	p := project(t)
	fin, logi := environment(t, p, "finance"), environment(t, p, "logistics")
	require.Equal(t, fin, environment(t, p, "finance-2"), "the replicas run one configuration")
	require.Equal(t, secretOf(t, p, "finance", "WEBHOOK_SECRET_FILE", secrets),
		secretOf(t, p, "logistics", "WEBHOOK_SECRET_FILE", secrets), "sender and receiver share the secret")
	require.Contains(t, strings.Split(secretOf(t, p, "logistics", "API_TOKENS_FILE", secrets), ","),
		"ops:"+secretOf(t, p, "finance", "LOGISTICS_OPS_TOKEN_FILE", secrets),
		"reconciliation presents an ops token logistics knows")

	hook := parseURL(t, fin["LOGISTICS_WEBHOOK_URL"])
	require.Contains(t, p.ServiceNames(), hook.Hostname(), "the webhook URL names a compose service")
	require.Equal(t, "/webhooks/finance", hook.Path)
	_, logiPort := splitAddr(t, logi["HTTP_ADDR"])
	require.Equal(t, logiPort, hook.Port(), "the webhook URL uses the port logistics listens on")
	require.Contains(t, strings.FieldsFunc(fin["OUTBOUND_ALLOW"], func(r rune) bool { return r == ',' || r == ' ' }),
		hook.Host, "the SSRF guard lets the dispatcher reach its destination")
	batch, err := strconv.Atoi(fin["DISPATCH_BATCH"])
	require.NoError(t, err)
	maxItems, err := strconv.Atoi(logi["BATCH_MAX_ITEMS"])
	require.NoError(t, err)
	require.GreaterOrEqual(t, maxItems, batch, "logistics accepts every batch finance claims (DISPATCH_MODE=batch)")

	for name := range binaryOf {
		svc := serviceConfig(t, p, name)
		host, port := splitAddr(t, environment(t, p, name)["HTTP_ADDR"])
		require.Equal(t, "0.0.0.0", host, "%s listens beyond the container's loopback", name)
		require.Len(t, svc.Ports, 1, name)
		require.Equal(t, port, strconv.Itoa(int(svc.Ports[0].Target)), "%s publishes the port it listens on", name)
		require.Equal(t, "127.0.0.1", svc.Ports[0].HostIP, "%s is published on the host's loopback only", name)
	}
}

func parseURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err, raw)
	return u
}

func splitAddr(t testing.TB, addr string) (host, port string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	return host, port
}
