package baseline

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CPUTimes is cumulative processor time by process id.
type CPUTimes map[int]time.Duration

// BackendTimes reads the times of the backends connected to db's database: the
// pool's own connections, and any other client's.
func BackendTimes(ctx context.Context, db *pgxpool.Pool) CPUTimes {
	out := CPUTimes{}
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			if t, ok := ProcessTime(pid); ok {
				out[pid] = t
			}
		}
	}
	return out
}

// SelfTime is this process's user + system time.
func SelfTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Spent sums each process's growth from before to after; a process that appeared in
// between counts from zero, one that vanished is lost (pools keep their backends).
func Spent(before, after CPUTimes) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// ProcessTime is a process's user + system time from /proc/<pid>/stat.
func ProcessTime(pid int) (time.Duration, bool) {
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
