// Package harness runs the real finance and logistics binaries as processes against
// fresh PostgreSQL databases, for black-box and chaos tests.
package harness

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"handoff/e2e/faultproxy"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// Dev credentials of every harness environment.
const (
	ClerkToken     = "clerk-e2e-token-0123456789"
	OpsToken       = "ops-e2e-token-0123456789ab"
	WarehouseToken = "warehouse-e2e-token-012345"
)

// SecretKey is the webhook secret both services share.
var SecretKey = []byte("e2e-webhook-secret-0123456789abcdef")

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// repoRoot is the monorepo root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Binaries builds both binaries once per test process and returns their directory.
// They are built without the race detector: the unit tests run with it, and chaos
// runs need the CPU for restarts and traffic.
func Binaries(t testing.TB) string {
	t.Helper()
	dir, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Build builds both binaries into a temporary directory once per process and returns
// the directory (RemoveBinaries deletes it).
func Build() (string, error) {
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "handoff-e2e-bin-")
		if buildErr == nil {
			buildErr = BuildInto(binDir)
		}
	})
	return binDir, buildErr
}

// BuildInto builds both binaries into dir (relative to the working directory). go
// build links nothing anew whose binary in dir is up to date, so a dir kept between
// runs (the benchmark's) costs a link only after a change.
func BuildInto(dir string) error {
	dir, err := filepath.Abs(dir) // each build runs in its module's directory
	if err != nil {
		return err
	}
	for _, svc := range []string{"finance", "logistics"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, svc), "./cmd/"+svc)
		cmd.Dir = filepath.Join(repoRoot(), svc)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", svc, err, out)
		}
	}
	return nil
}

// Env is one pair of services with their own databases.
type Env struct {
	FinanceDB, LogisticsDB string
	Finance, Logistics     *Service

	// Proxy sits between finance and logistics when Options.Proxy was set.
	Proxy *faultproxy.Proxy

	bin        string
	financeEnv map[string]string
}

// NewFinance prepares another finance replica on the same database and destination,
// with extra variables on top; start it with Start or Run.
func (e *Env) NewFinance(t testing.TB, extra map[string]string) *Service {
	t.Helper()
	return NewService(t, filepath.Join(e.bin, "finance"), merge(e.financeEnv, extra))
}

// Options adjusts an environment.
type Options struct {
	// FinanceEnv and LogisticsEnv are extra variables (override the defaults).
	FinanceEnv, LogisticsEnv map[string]string
	// LogisticsURL, when set, is where finance delivers.
	LogisticsURL string
	// Proxy puts a fault-injecting proxy between finance and logistics (Env.Proxy).
	Proxy bool
}

// New starts logistics and finance on fresh databases and waits until both are ready.
// Both are stopped when the test ends.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	bin := Binaries(t)
	env := &Env{
		FinanceDB:   pgtest.NewURL(t, "finance", migrations.Finance()),
		LogisticsDB: pgtest.NewURL(t, "logistics", migrations.Logistics()),
	}
	common := map[string]string{
		"API_TOKENS":     "clerk:" + ClerkToken + ",ops:" + OpsToken + ",warehouse:" + WarehouseToken,
		"WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(SecretKey),
		"LOG_LEVEL":      "debug",
		// Small pools: `make test` runs two environments at a time, each of two or
		// three services, on a server that other suites may share.
		"DB_MAX_CONNS": "4",
	}
	env.Logistics = NewService(t, filepath.Join(bin, "logistics"), merge(common,
		map[string]string{"DATABASE_URL": env.LogisticsDB}, opts.LogisticsEnv))
	env.Logistics.Start(t)
	target := opts.LogisticsURL
	if opts.Proxy {
		p, err := faultproxy.New(env.Logistics.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		env.Proxy = p
		target = "http://" + p.Addr() + "/webhooks/finance"
	}
	if target == "" {
		target = env.Logistics.URL + "/webhooks/finance"
	}
	env.bin = bin
	env.financeEnv = merge(common, map[string]string{
		"DATABASE_URL":          env.FinanceDB,
		"LOGISTICS_WEBHOOK_URL": target,
		"OUTBOUND_ALLOW":        "127.0.0.1/32",
	}, opts.FinanceEnv)
	env.Finance = env.NewFinance(t, nil)
	env.Finance.Start(t)
	return env
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Service is one binary run as a process on a fixed loopback port.
type Service struct {
	name string
	path string
	env  map[string]string
	Addr string
	URL  string

	logMu sync.Mutex
	log   *bytes.Buffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped
	state  *os.ProcessState
}

// NewService prepares a process of the binary at path on a free port; the test's
// failure prints its log. Until the test ends, Call and Do hold every exchange with it
// to its binary's OpenAPI document.
func NewService(t testing.TB, path string, env map[string]string) *Service {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := Prepare(path, addr, env)
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("---- %s log ----\n%s", s.name, s.Log())
		}
	})
	watchService(t, s)
	return s
}

// Prepare describes a process of the binary at path serving on addr, not started.
func Prepare(path, addr string, env map[string]string) *Service {
	return &Service{name: filepath.Base(path), path: path, env: merge(env, map[string]string{"HTTP_ADDR": addr}),
		Addr: addr, URL: "http://" + addr, log: &bytes.Buffer{}}
}

// ReadyWithin is how long a started service gets to answer /readyz: enough for its
// own wait for a free connection slot when the server is full.
const ReadyWithin = pgdb.SlotWait + 30*time.Second

// Start runs the process and waits for /readyz, failing the test otherwise.
func (s *Service) Start(t testing.TB) {
	t.Helper()
	if err := s.Run(ReadyWithin); err != nil {
		t.Fatal(err)
	}
}

// Run starts the process and waits up to within for /readyz.
func (s *Service) Run(within time.Duration) error {
	s.mu.Lock()
	cmd := exec.Command(s.path, "serve")
	cmd.Env = os.Environ()
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout = lockedWriter{s}
	cmd.Stderr = lockedWriter{s}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		s.mu.Lock()
		s.state = cmd.ProcessState
		s.mu.Unlock()
		close(exited)
	}()
	s.cmd, s.exited, s.state = cmd, exited, nil
	s.mu.Unlock()
	return s.waitReady(within)
}

func (s *Service) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited before it was ready (exit %d)\n%s", s.name, s.ExitCode(), s.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready after %s\n%s", s.name, within, s.Log())
}

// Kill sends SIGKILL and waits for the process to die.
func (s *Service) Kill(t testing.TB) { s.report(t, s.Signal(syscall.SIGKILL)) }

// Stop sends SIGTERM and waits; a process still alive after 20 s is killed.
func (s *Service) Stop(t testing.TB) { s.report(t, s.Signal(syscall.SIGTERM)) }

func (s *Service) report(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

// Running reports whether the last process started is still alive.
func (s *Service) Running() bool {
	cmd, _ := s.alive()
	return cmd != nil
}

// alive returns the last process started and the channel closed when it has been
// reaped, or nil and nil when it has exited or none was started.
func (s *Service) alive() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil, nil
	}
	select {
	case <-exited:
		return nil, nil
	default:
		return cmd, exited
	}
}

// ExitCode of the last run (after Stop or Kill), -1 when killed by a signal.
func (s *Service) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return -1
	}
	return s.state.ExitCode()
}

// Signal sends sig and waits for the process to exit; after 20 s it is killed and an
// error returned.
func (s *Service) Signal(sig syscall.Signal) error {
	cmd, exited := s.alive()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s did not stop within 20 s of %v", s.name, sig)
	}
}

// Log returns everything the process wrote.
func (s *Service) Log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

type lockedWriter struct{ s *Service }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	return w.s.log.Write(p)
}

// FreeAddr returns a loopback address with a port that was free a moment ago. The port
// lies below the kernel's ephemeral range when there is room there: a port from that
// range, once released, can be handed to one of the many outgoing connections a
// chaos run makes before the service binds it ("address already in use"), and to a
// restarted service after a SIGKILL, which binds the same port again.
func FreeAddr() (string, error) {
	var lc net.ListenConfig
	if low := ephemeralLow(); low > minPort+1000 {
		for range 50 {
			port := minPort + rand.IntN(low-minPort)
			ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				addr := ln.Addr().String()
				return addr, ln.Close()
			}
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// minPort is the lowest port FreeAddr picks, clear of the usual services' ports.
const minPort = 20000

// ephemeralLow is the first port of Linux's ephemeral range, or 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}

// RemoveBinaries deletes what Build made; call it from TestMain after the tests.
func RemoveBinaries() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// RunTests is a TestMain of a package whose tests run the binaries: it runs the
// tests, removes the binaries and exits with the tests' status.
func RunTests(m *testing.M) {
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}
