package deploy

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

// TestComposeConfigurationBootsTheBinaries runs each binary on the environment
// compose.yaml gives its service, its secrets read from the files
// deploy/gen-secrets.sh writes, with only the database swapped for a fresh test
// database and HTTP_ADDR for a free loopback port, and waits for /readyz: the
// container settings pass the binary's own validation. The image's healthcheck command
// then reports healthy, and unhealthy once the service has stopped.
func TestComposeConfigurationBootsTheBinaries(t *testing.T) {
	t.Parallel()
	p := project(t)
	secretDir, _ := generatedSecrets(t)
	dir := harness.Binaries(t)
	for service, src := range map[string]fs.FS{"finance": migrations.Finance(), "logistics": migrations.Logistics()} {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			env := environment(t, p, service)
			// Each /run/secrets/ path is the file it is mounted from.
			files := mounted(t, p, service)
			for k, v := range env {
				if file, ok := files[v]; ok {
					env[k] = filepath.Join(secretDir, file)
				}
			}
			delete(env, "DATABASE_URL_FILE")
			env["DATABASE_URL"] = pgtest.NewURL(t, service, src)
			bin := filepath.Join(dir, binaryOf[service])
			svc := harness.NewService(t, bin, env)
			svc.Start(t)

			// As in the container: the healthcheck inherits HTTP_ADDR=0.0.0.0:<port>.
			_, port := splitAddr(t, svc.Addr)
			env["HTTP_ADDR"] = "0.0.0.0:" + port
			healthcheck := func() ([]byte, error) {
				cmd := exec.Command(bin, "healthcheck")
				cmd.Env = list(env)
				return cmd.CombinedOutput()
			}
			out, err := healthcheck()
			require.NoError(t, err, "%s", out)
			require.Empty(t, out)

			svc.Stop(t)
			out, err = healthcheck()
			require.Error(t, err, "a stopped service is unhealthy")
			require.Contains(t, string(out), "probe")
		})
	}
}

func TestBinariesPrintVersionWithoutConfiguration(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"finance", "logistics"} {
		out := runBinary(t, bin, "version")
		require.True(t, strings.HasPrefix(string(out), bin+" "), "%s", out)
		require.Contains(t, string(out), "  revision  ")
		require.Contains(t, string(out), "  go        go1.")
	}
}

// list renders env as KEY=value pairs for exec.Cmd.
func list(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
