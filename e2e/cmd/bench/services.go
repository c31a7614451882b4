package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"handoff/e2e/harness"
)

// readyWithin bounds a service's start.
const readyWithin = 30 * time.Second

// env is one pair of services on fresh databases, delivering in one mode, with the
// benchmark's own connections to both databases.
type env struct {
	mode       string
	label      string // names the databases and the saved logs: the mode, or <mode>_drains
	bin        string
	cl         *cluster
	financeEnv map[string]string
	dest       string // LOGISTICS_WEBHOOK_URL
	finance    *harness.Service
	logistics  *harness.Service
	replicas   []*harness.Service
	exited     []*harness.Service // stopped replicas, kept for their logs
	fdb, ldb   *pgxpool.Pool
	dbNames    []string
	dbURLs     []string
	// autovacuum is how often the stand-in for autovacuum looks (0: no stand-in);
	// stop stops the one running, if any.
	autovacuum time.Duration
	stop       func()
	// beside, when set, runs right after the one-dispatcher drain of the scaling
	// phase: another drainer measured within the same minutes of the machine.
	beside func()
	// drains is the pair of services the scaling phase ran on, kept for its logs;
	// drained its outbox's counts at the end.
	drains  *env
	drained OutboxCounts
}

// errBatchUnavailable means logistics has no batch endpoint yet.
var errBatchUnavailable = errors.New("batch endpoint not available")

// startEnv creates the databases <label>_finance and <label>_logistics and starts
// logistics, then finance delivering in mode, each applying its migrations, both with
// vars on top of the benchmark's settings. In batch mode it first checks that
// logistics serves the batch endpoint and returns errBatchUnavailable when it does not.
func startEnv(ctx context.Context, cl *cluster, bin, mode, label string, vars map[string]string) (*env, error) {
	e := &env{mode: mode, label: label, bin: bin, cl: cl, dbNames: []string{dbPrefix + label + "_finance", dbPrefix + label + "_logistics"}}
	financeURL, err := cl.create(ctx, label+"_finance")
	if err != nil {
		return nil, err
	}
	common := serviceVars(vars)
	var logisticsURL string
	if e.logistics, logisticsURL, err = startLogistics(ctx, cl, bin, label+"_logistics", common); err != nil {
		e.close() // a logistics that did not get ready may still run
		return nil, err
	}
	if mode == "batch" {
		if ok, err := batchEndpoint(ctx, e.logistics.URL); err != nil || !ok {
			e.close()
			return nil, cmpErr(err, errBatchUnavailable)
		}
	}
	e.dest = e.logistics.URL + "/webhooks/finance"
	e.financeEnv = with(common,
		"DATABASE_URL", financeURL,
		"LOGISTICS_WEBHOOK_URL", e.dest,
		"OUTBOUND_ALLOW", "127.0.0.1/32",
		"DISPATCH_MODE", mode,
		// An outage's first failures back off and the circuit cools down for seconds,
		// not the production minutes: the drain measures throughput, not the schedule.
		"DISPATCH_BACKOFF", "1s,2s,4s",
		"BREAKER_COOLDOWN", "1s")
	maps.Copy(e.financeEnv, vars)
	if e.finance, err = prepare(bin, "finance", e.financeEnv); err != nil {
		e.close()
		return nil, err
	}
	if err := e.finance.Run(readyWithin); err != nil {
		e.close()
		return nil, err
	}
	if err := e.connect(ctx, financeURL, logisticsURL); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// serviceVars is the environment every service process of the benchmark gets: the
// harness's tokens and webhook secret, warn-level logs, and vars on top.
func serviceVars(vars map[string]string) map[string]string {
	common := map[string]string{
		"API_TOKENS":     "clerk:" + harness.ClerkToken + ",ops:" + harness.OpsToken + ",warehouse:" + harness.WarehouseToken,
		"WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(harness.SecretKey),
		"LOG_LEVEL":      "warn", // per-event info lines would fill the harness's in-memory log
	}
	maps.Copy(common, vars)
	return common
}

// startLogistics creates the database handoff_bench_<label> and starts logistics on
// it with common, returning the service and its database's URL once it is ready.
func startLogistics(ctx context.Context, cl *cluster, bin, label string, common map[string]string) (*harness.Service, string, error) {
	dbURL, err := cl.create(ctx, label)
	if err != nil {
		return nil, "", err
	}
	s, err := prepare(bin, "logistics", with(common, "DATABASE_URL", dbURL))
	if err != nil {
		return nil, "", err
	}
	if err := s.Run(readyWithin); err != nil {
		return s, "", err
	}
	return s, dbURL, nil
}

func (e *env) connect(ctx context.Context, financeURL, logisticsURL string) error {
	var err error
	e.dbURLs = []string{financeURL, logisticsURL}
	if e.fdb, err = openPool(ctx, financeURL, 4); err != nil {
		return fmt.Errorf("finance database: %w", err)
	}
	if e.ldb, err = openPool(ctx, logisticsURL, 4); err != nil {
		return fmt.Errorf("logistics database: %w", err)
	}
	return nil
}

// startAutovacuum starts a stand-in for autovacuum on both databases, its first look
// one interval from now, unless the server's own autovacuum is on.
func (e *env) startAutovacuum(ctx context.Context) error {
	if e.autovacuum == 0 {
		return nil
	}
	e.stopAutovacuum()
	stop, err := autovacuumEvery(ctx, e.autovacuum, e.dbURLs...)
	if err != nil {
		return fmt.Errorf("autovacuum stand-in: %w", err)
	}
	e.stop = stop
	return nil
}

// stopAutovacuum stops the stand-in, if one runs.
func (e *env) stopAutovacuum() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

// cpu reads the processor time so far of both services and their backends.
func (e *env) cpu(ctx context.Context) (cpuSnapshot, error) {
	return snapshot(ctx, e.bin, e.fdb, e.dbNames)
}

// prepare describes a process of the named binary on a free loopback port.
func prepare(bin, name string, vars map[string]string) (*harness.Service, error) {
	addr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	return harness.Prepare(filepath.Join(bin, name), addr, vars), nil
}

// batchEndpoint reports whether logistics routes POST /webhooks/finance/batch: an
// unsigned request is refused there (401, 400, 415…), and answered 404 or 405 only
// when the route does not exist.
func batchEndpoint(ctx context.Context, logisticsURL string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, logisticsURL+"/webhooks/finance/batch", strings.NewReader(`{"items":[]}`))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("probe the batch endpoint: %w", err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed, nil
}

// startReplicas runs n more finance processes with the dispatcher on, on the same
// database and destination, and waits until each is ready.
func (e *env) startReplicas(n int) error {
	for range n {
		r, err := prepare(e.bin, "finance", with(e.financeEnv, "MIGRATE_ON_START", "false", "DISPATCH_ENABLED", "true"))
		if err != nil {
			return err
		}
		e.replicas = append(e.replicas, r)
		if err := r.Run(readyWithin); err != nil {
			return err
		}
	}
	return nil
}

// stopReplicas stops every extra finance process.
func (e *env) stopReplicas() error {
	var errs []error
	for _, r := range e.replicas {
		errs = append(errs, r.Signal(syscall.SIGTERM))
	}
	e.exited = append(e.exited, e.replicas...)
	e.replicas = nil
	return errors.Join(errs...)
}

// close stops every process and closes the connections; the databases are dropped
// by the cluster.
func (e *env) close() {
	e.stopAutovacuum()
	_ = e.stopReplicas()
	for _, s := range []*harness.Service{e.finance, e.logistics} {
		if s != nil {
			_ = s.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range []*pgxpool.Pool{e.fdb, e.ldb} {
		if p != nil {
			p.Close()
		}
	}
}

// logTail is the end of a service's log, for an error message.
func logTail(s *harness.Service) string {
	const n = 2000
	l := s.Log()
	if len(l) > n {
		l = "…" + l[len(l)-n:]
	}
	return l
}

// with returns a copy of m with the key/value pairs kv set.
func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// cmpErr returns err, or fallback when err is nil.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}
