package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// cpuTimes is cumulative processor time by process id.
type cpuTimes map[int]time.Duration

// cpuSnapshot is the processor time so far of each component's processes.
type cpuSnapshot struct {
	finance, logistics, postgres cpuTimes
}

// snapshot reads the times of the processes running the binaries in bin and of the
// PostgreSQL backends connected to dbs.
func snapshot(ctx context.Context, bin string, admin *pgxpool.Pool, dbs []string) (cpuSnapshot, error) {
	s := cpuSnapshot{
		finance:   processesOf(filepath.Join(bin, "finance")),
		logistics: processesOf(filepath.Join(bin, "logistics")),
		postgres:  cpuTimes{},
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
		if t, ok := processTime(pid); ok {
			s.postgres[pid] = t
		}
	}
	return s, rows.Err()
}

// backendTimes reads the times of db's own backends (the pool's connections).
func backendTimes(ctx context.Context, db *pgxpool.Pool) cpuTimes {
	out := cpuTimes{}
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			if t, ok := processTime(pid); ok {
				out[pid] = t
			}
		}
	}
	return out
}

// selfTime is this process's user + system time.
func selfTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perEvent is the time spent between s and later, per event.
func (s cpuSnapshot) perEvent(later cpuSnapshot, events int64) CPU {
	if events == 0 {
		return CPU{}
	}
	per := func(a, b cpuTimes) float64 { return ms(spent(a, b)) / float64(events) }
	c := CPU{
		Finance:    per(s.finance, later.finance),
		Logistics:  per(s.logistics, later.logistics),
		PostgreSQL: per(s.postgres, later.postgres),
	}
	c.Total = c.Finance + c.Logistics + c.PostgreSQL
	return c
}

// spent sums each process's growth from before to after; a process that appeared in
// between counts from zero, one that vanished is lost (pools keep their backends).
func spent(before, after cpuTimes) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// processesOf finds the running processes whose executable path is exe.
func processesOf(exe string) cpuTimes {
	out := cpuTimes{}
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
		if t, ok := processTime(pid); ok {
			out[pid] = t
		}
	}
	return out
}

// processTime is a process's user + system time from /proc/<pid>/stat.
func processTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}
