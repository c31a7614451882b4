package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Machine names where the numbers were taken.
type Machine struct {
	CPU       string  `json:"cpu"`
	Cores     int     `json:"cores"`
	MemoryGiB float64 `json:"memory_gib"`
	// LoadAverage is /proc/loadavg's 1-minute figure when the run started: other work
	// on the machine makes every figure lower.
	LoadAverage string    `json:"load_average"`
	PostgreSQL  string    `json:"postgresql"`
	Settings    []Setting `json:"settings"`
	// naptime is the server's autovacuum_naptime: autovacuum looks at a database at
	// most this often.
	naptime time.Duration
}

// Setting is one PostgreSQL setting as SHOW prints it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// setting returns the value of a key setting, or "".
func (m Machine) setting(name string) string {
	for _, s := range m.Settings {
		if s.Name == name {
			return s.Value
		}
	}
	return ""
}

// keySettings are the PostgreSQL settings that move these figures most.
var keySettings = []string{"shared_buffers", "synchronous_commit", "fsync", "max_connections", "autovacuum"}

// describeMachine reads the CPU, memory and load from /proc and the server's version
// and key settings.
func describeMachine(ctx context.Context, adminURL string) (Machine, error) {
	m := Machine{
		CPU:         procField("/proc/cpuinfo", "model name"),
		Cores:       runtime.NumCPU(),
		LoadAverage: loadAverage(),
	}
	if kb, err := strconv.ParseFloat(strings.Fields(procField("/proc/meminfo", "MemTotal") + " 0")[0], 64); err == nil {
		m.MemoryGiB = kb / (1 << 20)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return Machine{}, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&m.PostgreSQL); err != nil {
		return Machine{}, fmt.Errorf("server version: %w", err)
	}
	for _, name := range keySettings {
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v); err != nil {
			return Machine{}, fmt.Errorf("setting %s: %w", name, err)
		}
		m.Settings = append(m.Settings, Setting{Name: name, Value: v})
	}
	var secs int64
	if err := conn.QueryRow(ctx, `SELECT setting::bigint FROM pg_settings WHERE name = 'autovacuum_naptime'`).Scan(&secs); err != nil {
		return Machine{}, fmt.Errorf("setting autovacuum_naptime: %w", err)
	}
	m.naptime = time.Duration(secs) * time.Second
	return m, nil
}

// procField returns the value of the first "key : value" line of a /proc file, or
// "unknown".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
