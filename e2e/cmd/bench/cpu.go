package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"handoff/e2e/cmd/bench/baseline"
)

// CPU is the processor time a run cost, per event, in milliseconds: what finance
// (every replica), logistics and the PostgreSQL backends serving their databases
// burned. Unlike rates it hardly moves when other work shares the machine, so it
// compares runs taken on a busy machine. It is zero when PostgreSQL runs elsewhere
// (its backends are not in this machine's /proc).
type CPU struct {
	Finance    float64 `json:"finance_ms"`
	Logistics  float64 `json:"logistics_ms"`
	PostgreSQL float64 `json:"postgresql_ms"`
	Total      float64 `json:"total_ms"`
}

// cpuSnapshot is the processor time so far of each component's processes.
type cpuSnapshot struct {
	finance, logistics, postgres baseline.CPUTimes
}

// snapshot reads the times of the processes running the binaries in bin and of the
// PostgreSQL backends connected to dbs.
func snapshot(ctx context.Context, bin string, admin *pgxpool.Pool, dbs []string) (cpuSnapshot, error) {
	s := cpuSnapshot{
		finance:   processesOf(filepath.Join(bin, "finance")),
		logistics: processesOf(filepath.Join(bin, "logistics")),
		postgres:  baseline.CPUTimes{},
	}
	rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)`, dbs)
	if err != nil {
		return s, fmt.Errorf("backend pids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return s, err
		}
		if t, ok := baseline.ProcessTime(pid); ok {
			s.postgres[pid] = t
		}
	}
	return s, rows.Err()
}

// perEvent is the time spent between s and later, per event.
func (s cpuSnapshot) perEvent(later cpuSnapshot, events int64) CPU {
	if events == 0 {
		return CPU{}
	}
	per := func(a, b baseline.CPUTimes) float64 { return ms(baseline.Spent(a, b)) / float64(events) }
	c := CPU{
		Finance:    per(s.finance, later.finance),
		Logistics:  per(s.logistics, later.logistics),
		PostgreSQL: per(s.postgres, later.postgres),
	}
	c.Total = c.Finance + c.Logistics + c.PostgreSQL
	return c
}

// processesOf finds the running processes whose executable path is exe.
func processesOf(exe string) baseline.CPUTimes {
	out := baseline.CPUTimes{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(bytes.SplitN(cmd, []byte{0}, 2)[0]) != exe {
			continue
		}
		if t, ok := baseline.ProcessTime(pid); ok {
			out[pid] = t
		}
	}
	return out
}
