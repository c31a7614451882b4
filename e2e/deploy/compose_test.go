// Package deploy checks compose.yaml and the images it builds without a Docker engine:
// the file is loaded by the Compose specification's own Go loader (the one docker
// compose uses), its settings are compared with what the binaries read, and the real
// binaries are booted on them.
package deploy

import (
	"bytes"
	"context"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
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

// generatedEnv runs deploy/gen-env.sh, the documented way to make .env, and returns
// the variables it printed.
func generatedEnv(t testing.TB) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "deploy", "gen-env.sh"))
	out, err := cmd.Output()
	require.NoError(t, err)
	env, err := dotenv.Parse(bytes.NewReader(out))
	require.NoError(t, err)
	require.NotEmpty(t, env)
	return env
}

// loadProject loads compose.yaml as `docker compose` would with env as its .env and
// the given profiles active; nothing of this process's environment leaks in.
func loadProject(t testing.TB, env map[string]string, profiles ...string) (*types.Project, error) {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(list(env)), cli.WithProfiles(profiles))
	require.NoError(t, err)
	return opts.LoadProject(context.Background())
}

// project loads compose.yaml with freshly generated secrets, failing the test otherwise.
func project(t testing.TB, profiles ...string) *types.Project {
	t.Helper()
	p, err := loadProject(t, generatedEnv(t), profiles...)
	require.NoError(t, err)
	return p
}

// environment is the resolved environment of one service.
func environment(t testing.TB, p *types.Project, service string) map[string]string {
	t.Helper()
	svc, err := p.GetService(service)
	require.NoError(t, err)
	env := map[string]string{}
	for k, v := range svc.Environment {
		require.NotNil(t, v, "%s: %s has no value", service, k)
		env[k] = *v
	}
	return env
}

func TestComposeLoadsWithGeneratedSecrets(t *testing.T) {
	t.Parallel()
	p := project(t)
	require.ElementsMatch(t, []string{"postgres", "logistics", "finance", "finance-2"}, p.ServiceNames())
	require.Equal(t, []string{"slack"}, p.DisabledServiceNames(), "the Slack stand-in is optional")

	withSlack := project(t, "slack")
	require.Contains(t, withSlack.ServiceNames(), "slack")
	allow := strings.FieldsFunc(environment(t, withSlack, "finance")["OUTBOUND_ALLOW"], func(r rune) bool { return r == ',' || r == ' ' })
	require.Contains(t, allow, "slack:8080", "the SSRF guard lets pages reach the stand-in at SLACK_WEBHOOK_URL=http://slack:8080/…")
}

// TestComposeRequiresEverySecret: each secret is a ${VAR:?} reference, so compose
// refuses to start without it instead of running with an empty password or token.
func TestComposeRequiresEverySecret(t *testing.T) {
	t.Parallel()
	env := generatedEnv(t)
	for name := range env {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			without := maps.Clone(env)
			delete(without, name)
			_, err := loadProject(t, without)
			require.ErrorContains(t, err, name)
			require.ErrorContains(t, err, "deploy/gen-env.sh", "the error says how to make the secrets")
		})
	}
}

func TestComposeServicesRunHardened(t *testing.T) {
	t.Parallel()
	p := project(t, "slack")
	root := repoRoot(t)
	for _, name := range []string{"finance", "finance-2", "logistics", "slack"} {
		svc, err := p.GetService(name)
		require.NoError(t, err)
		require.True(t, svc.ReadOnly, "%s: read-only root filesystem", name)
		require.Equal(t, []string{"ALL"}, svc.CapDrop, "%s: no capabilities", name)
		require.Contains(t, svc.SecurityOpt, "no-new-privileges:true", name)
		require.NotNil(t, svc.Build, "%s is built from the repository", name)
		require.Equal(t, root, svc.Build.Context, "%s: the build context is the repository root (go.work spans it)", name)
		require.FileExists(t, filepath.Join(root, svc.Build.Dockerfile), name)
	}
	for name, bin := range binaryOf {
		svc, err := p.GetService(name)
		require.NoError(t, err)
		require.NotNil(t, svc.HealthCheck, name)
		require.Equal(t, types.HealthCheckTest{"CMD", "/usr/local/bin/" + bin, "healthcheck"}, svc.HealthCheck.Test, name)
		require.Equal(t, types.ServiceConditionHealthy, svc.DependsOn["postgres"].Condition, "%s waits for PostgreSQL", name)
	}
}

func TestComposeStartsTheDatabasesTheServicesUse(t *testing.T) {
	t.Parallel()
	p := project(t)
	pg, err := p.GetService("postgres")
	require.NoError(t, err)
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

	for name := range binaryOf {
		dbURL := parseURL(t, environment(t, p, name)["DATABASE_URL"])
		require.Equal(t, "postgres", dbURL.Hostname(), "%s connects to the postgres service", name)
		db, user := strings.TrimPrefix(dbURL.Path, "/"), dbURL.User.Username()
		require.Contains(t, string(sql), "CREATE DATABASE "+db+" OWNER "+user+";", "%s: the init script creates its database", name)
		password, _ := dbURL.User.Password()
		require.Equal(t, environment(t, p, "postgres")[strings.ToUpper(user)+"_DB_PASSWORD"], password,
			"%s logs in with the password the init script set", name)
	}
}

func TestComposeWiresFinanceToLogistics(t *testing.T) {
	t.Parallel()
	p := project(t)
	fin, logi := environment(t, p, "finance"), environment(t, p, "logistics")
	require.Equal(t, fin, environment(t, p, "finance-2"), "the replicas run one configuration")
	require.Equal(t, fin["WEBHOOK_SECRET"], logi["WEBHOOK_SECRET"], "sender and receiver share the secret")

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
		svc, err := p.GetService(name)
		require.NoError(t, err)
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
