// Package baseline is what the River baseline (e2e/riverbaseline) reports of one
// drain: it prints a Result as one JSON object, and cmd/bench reads it back into the
// same type, so the two sides cannot disagree on a field. Both measure processor time
// with the same functions (cpu.go).
package baseline

// Result is one drain of the seeded events by one River client.
type Result struct {
	// River is the version of github.com/riverqueue/river built in.
	River      string `json:"river"`
	MaxWorkers int    `json:"max_workers"`
	// FetchCooldown is the client's, "100ms (default)" when none was given.
	FetchCooldown string `json:"fetch_cooldown"`
	DBConns       int    `json:"db_conns"`
	Events        int64  `json:"events"`
	// SecondsToEmpty runs from the insert's commit to the last job's completion;
	// EventsPerSec is Events over it.
	SecondsToEmpty float64 `json:"seconds_to_empty"`
	EventsPerSec   float64 `json:"events_per_sec"`
	// FirstStartMs is the commit to the first job's start.
	FirstStartMs float64 `json:"first_start_ms"`
	// Snoozed counts 409 answers; Errored the jobs that needed more than one attempt
	// for any other reason.
	Snoozed int64 `json:"snoozed"`
	Errored int64 `json:"errored"`
	// RiverCPUMs is the processor time the baseline's process spent from just before
	// the insert to the last completion, PostgresCPUMs that of the backends of River's
	// database over the same window, both in milliseconds for the whole drain.
	RiverCPUMs    float64 `json:"river_cpu_ms"`
	PostgresCPUMs float64 `json:"postgres_cpu_ms"`
}
