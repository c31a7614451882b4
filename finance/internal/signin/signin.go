// Package signin keeps the dashboard's sign-ins in PostgreSQL, where every finance
// replica sees them: the live sessions, which logout and expiry end on every replica
// at once, and the failed attempts that throttle guessing, per client address and for
// everyone together. Every time that decides an expiry or a window is the database's
// now(), so replicas with skewed clocks agree.
package signin

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Tables of finance that sign-ins live in (migrations/finance 000006).
const (
	sessionsTable = "finance_dashboard_sessions"
	attemptsTable = "finance_dashboard_sign_in_attempts"
)

// Defaults of Config.
const (
	DefaultPerClient = 10
	DefaultGlobal    = 100
	DefaultWindow    = time.Minute
)

// Config is the throttle; zero fields take the defaults.
type Config struct {
	// PerClient is how many failed sign-ins one client may make within Window; its
	// next attempt is refused without looking at the token (default 10).
	PerClient int
	// Global is how many failed sign-ins all clients together may make within Window;
	// past it every attempt is refused, a correct token's too, until the oldest
	// failures leave the window (default 100). It caps guessing spread over many
	// addresses.
	Global int
	// Window is how far back failures count, a sliding window (default 1m).
	Window time.Duration
}

// Validate reports the first field out of range, by name.
func (c Config) Validate() error {
	switch {
	case c.PerClient < 1:
		return errors.New("signin: PerClient must be at least 1")
	case c.Global < c.PerClient:
		return errors.New("signin: Global must be at least PerClient")
	case c.Window < time.Second:
		return errors.New("signin: Window must be at least 1s")
	}
	return nil
}

// Store holds the SQL of sign-ins.
type Store struct {
	db  bun.IDB
	cfg Config
}

// New returns the store of db with cfg's defaults filled in.
func New(db bun.IDB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("signin: DB is required")
	}
	cfg.PerClient = cmp.Or(cfg.PerClient, DefaultPerClient)
	cfg.Global = cmp.Or(cfg.Global, DefaultGlobal)
	cfg.Window = cmp.Or(cfg.Window, DefaultWindow)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Store{db: db, cfg: cfg}, nil
}

// ThrottledError refuses a sign-in attempt without checking its token: its client, or
// all clients together, failed too often within the window.
type ThrottledError struct {
	// RetryAfter is when the window admits an attempt again: whole seconds, at least 1.
	RetryAfter time.Duration
	// Everyone is true when the global ceiling refused it, not the client's own failures.
	Everyone bool
}

func (e *ThrottledError) Error() string {
	who := "this client"
	if e.Everyone {
		who = "all clients"
	}
	return fmt.Sprintf("signin: too many failed sign-ins from %s; retry after %s", who, e.RetryAfter)
}
