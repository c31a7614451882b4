package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"handoff/e2e/harness"
)

// LogErrors counts the services' ERROR lines by message: an outage's circuit opening
// belongs there, anything else in a clean run is worth a look.
type LogErrors map[string]int

// logErrors reads the ERROR lines of every process of e, replicas that have exited
// included.
func (e *env) logErrors() LogErrors {
	out := LogErrors{}
	if e.drains != nil {
		out = e.drains.logErrors()
	}
	for _, s := range append([]*harness.Service{e.finance, e.logistics}, e.exited...) {
		if s == nil {
			continue
		}
		for line := range strings.Lines(s.Log()) {
			var rec struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "ERROR" {
				out[rec.Msg]++
			}
		}
	}
	return out
}

// saveLogs writes the log of every process of e, and of the scaling phase's, into
// dir: <label>-finance.log, <label>-logistics.log and <label>-finance-replica-<n>.log.
func (e *env) saveLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if e.drains != nil {
		if err := e.drains.saveLogs(dir); err != nil {
			return err
		}
	}
	for i, s := range append([]*harness.Service{e.finance, e.logistics}, e.exited...) {
		if s == nil {
			continue
		}
		name := fmt.Sprintf("%s-finance-replica-%d.log", e.label, i-1)
		switch i {
		case 0:
			name = e.label + "-finance.log"
		case 1:
			name = e.label + "-logistics.log"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s.Log()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// String lists the messages, most frequent first.
func (l LogErrors) String() string {
	msgs := slices.SortedFunc(maps.Keys(l), func(a, b string) int { return l[b] - l[a] })
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = fmt.Sprintf("%q ×%d", m, l[m])
	}
	return strings.Join(parts, ", ")
}
