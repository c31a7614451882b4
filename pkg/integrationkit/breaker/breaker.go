// Package breaker is a circuit breaker per destination whose state lives in
// PostgreSQL, so every replica of a service sees the same circuit: it opens after
// Threshold consecutive retryable failures, refuses requests for Cooldown, then lets
// exactly one probe through across the whole cluster; the probe's success closes it,
// its failure opens it again. An operator may also pause a destination (Pause): every
// replica refuses it, whatever its circuit's state, until Resume.
//
// The table, named by the service, has the columns of Schema: destination (PK),
// state, failures, generation, open_until, probe_token, probe_expires_at, changed_at,
// last_transition, announced_generation, paused_at.
package breaker

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// State is where a circuit stands; its values are the strings stored in the table.
type State string

// States of a circuit.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half_open"
)

// Config tunes a Breaker; zero fields take the defaults.
type Config struct {
	// Table holds the circuits.
	Table string
	// Threshold consecutive retryable failures open the circuit (default 5).
	Threshold int
	// Cooldown is how long an open circuit refuses requests (default 30 s).
	Cooldown time.Duration
	// ProbeLease is how long the probe may take before another replica may probe
	// (default 30 s; set it above the request timeout).
	ProbeLease time.Duration
	// PausedWait is the Wait of a paused destination's refusal (default 1 min): how
	// long a caller defers before it asks again. Resume should hasten what was deferred.
	PausedWait time.Duration
}

// Breaker reads and moves the circuits of one table.
type Breaker struct {
	cfg Config
	sql statements
}

// statements are the per-request statements, fixed at New so pgx prepares each once
// per connection (pgdb.Prepared); the rarer ones stay with bun.
type statements struct {
	acquire, reset string
}

func newStatements(table string) statements {
	t := pgx.Identifier{table}.Sanitize()
	return statements{
		// $1 the destination, $2 the probe lease in seconds.
		acquire: `
		WITH probe AS (
			UPDATE ` + t + ` SET state = 'half_open', probe_token = gen_random_uuid(),
				probe_expires_at = now() + make_interval(secs => $2::float8), changed_at = now()
			WHERE destination = $1 AND paused_at IS NULL
			  AND ((state = 'open' AND open_until <= now()) OR (state = 'half_open' AND probe_expires_at <= now()))
			RETURNING probe_token, generation
		)
		SELECT c.state, c.generation, (SELECT probe_token FROM probe) AS probe, c.paused_at IS NOT NULL AS paused,
		       EXTRACT(EPOCH FROM (CASE WHEN c.state = 'open' THEN c.open_until ELSE c.probe_expires_at END) - now())::float8 AS wait_secs
		FROM ` + t + ` AS c WHERE c.destination = $1`,
		// $1 the destination, $2 the permit's generation.
		reset: `UPDATE ` + t + ` SET failures = 0 WHERE destination = $1 AND state = 'closed'
			AND generation = $2 AND failures > 0`,
	}
}

// New returns a breaker over cfg.Table.
func New(cfg Config) (*Breaker, error) {
	cfg.Threshold = cmp.Or(cfg.Threshold, 5)
	cfg.Cooldown = cmp.Or(cfg.Cooldown, 30*time.Second)
	cfg.ProbeLease = cmp.Or(cfg.ProbeLease, 30*time.Second)
	cfg.PausedWait = cmp.Or(cfg.PausedWait, time.Minute)
	switch {
	case !pgdb.ValidIdentifier(cfg.Table):
		return nil, fmt.Errorf("breaker: table name %q is not a plain lowercase identifier", cfg.Table)
	case cfg.Threshold < 1:
		return nil, fmt.Errorf("breaker: Threshold must be at least 1")
	case cfg.Cooldown <= 0 || cfg.ProbeLease <= 0 || cfg.PausedWait <= 0:
		return nil, fmt.Errorf("breaker: Cooldown, ProbeLease and PausedWait must be positive")
	}
	return &Breaker{cfg: cfg, sql: newStatements(cfg.Table)}, nil
}

// Permit is the answer to "may I send to this destination now?".
type Permit struct {
	// Allowed says a request may go.
	Allowed bool
	// Probe marks the one request of a half-open circuit.
	Probe bool
	// Wait, when not allowed, is about how long until the circuit may admit again.
	Wait time.Duration
	// ProbeInFlight, when not allowed, says the circuit is half-open: Wait runs to the
	// end of another caller's probe lease, and the circuit closes as soon as that
	// probe succeeds, which may be any moment.
	ProbeInFlight bool
	// Paused, when not allowed, says an operator paused the destination: Wait is
	// Config.PausedWait, and nothing may go until Resume.
	Paused bool

	token      uuid.UUID
	generation int64
}

// Transition is a change of circuit state caused by a recorded result ("" for none).
// It is a type of its own, apart from State: a circuit that is Closed has not
// necessarily just Recovered.
type Transition string

// The transitions worth paging about; the values are those stored as last_transition.
const (
	// Opened: the Threshold-th failure in a row opened a closed circuit.
	Opened Transition = "opened"
	// Reopened: the probe of a half-open circuit failed.
	Reopened Transition = "reopened"
	// Recovered: the probe succeeded and the circuit closed again.
	Recovered Transition = "closed"
)

// Acquire asks whether a request to dest may go now, in one statement that also reads
// whether dest is paused. A paused destination is refused; otherwise an open circuit
// whose cool-down is over, or a half-open one whose probe lease expired, is turned
// half-open by exactly one caller, which gets the probe.
func (b *Breaker) Acquire(ctx context.Context, db bun.IDB, dest string) (Permit, error) {
	var row struct {
		State      State
		Generation int64
		Probe      *uuid.UUID
		WaitSecs   *float64
		Paused     bool
	}
	err := pgdb.Prepared(db).QueryRow(ctx, b.sql.acquire, []any{dest, b.cfg.ProbeLease.Seconds()},
		&row.State, &row.Generation, &row.Probe, &row.Paused, &row.WaitSecs)
	if err != nil {
		if isNoRows(err) {
			return Permit{Allowed: true}, nil // never failed: closed
		}
		return Permit{}, fmt.Errorf("breaker: acquire %s: %w", dest, err)
	}
	switch {
	case row.Paused:
		return Permit{Wait: b.cfg.PausedWait, Paused: true}, nil
	case row.Probe != nil:
		return Permit{Allowed: true, Probe: true, token: *row.Probe, generation: row.Generation}, nil
	case row.State == Closed:
		return Permit{Allowed: true, generation: row.Generation}, nil
	default:
		wait := time.Second
		if row.WaitSecs != nil && *row.WaitSecs > 0 {
			wait = time.Duration(*row.WaitSecs * float64(time.Second))
		}
		return Permit{Wait: wait, ProbeInFlight: row.State == HalfOpen}, nil
	}
}

// Success records that dest answered and is up. A probe's success closes the circuit;
// otherwise the failure streak of the permit's generation is reset, even if it began
// after the permit was granted.
func (b *Breaker) Success(ctx context.Context, db bun.IDB, dest string, p Permit) (Transition, error) {
	if p.Probe {
		n, err := b.exec(ctx, db, `UPDATE ? SET state = 'closed', failures = 0, probe_token = NULL,
			probe_expires_at = NULL, open_until = NULL, generation = generation + 1, changed_at = now(),
			last_transition = 'closed'
			WHERE destination = ? AND probe_token = ?`, bun.Ident(b.cfg.Table), dest, p.token)
		if n == 1 {
			return Recovered, err
		}
		return "", err
	}
	// Reset the streak whatever the permit saw: failures recorded while this request
	// was in flight came before its success, so they are no longer consecutive. The
	// statement writes nothing when there is no streak to reset.
	if _, err := pgdb.Prepared(db).Exec(ctx, b.sql.reset, dest, p.generation); err != nil {
		return "", fmt.Errorf("breaker: %w", err)
	}
	return "", nil
}

// Failure records a retryable failure of dest. The Threshold-th consecutive one opens
// the circuit; a probe's failure opens it again. A result of a request that started in
// an earlier generation of the circuit changes nothing.
func (b *Breaker) Failure(ctx context.Context, db bun.IDB, dest string, p Permit) (Transition, error) {
	if p.Probe {
		n, err := b.exec(ctx, db, `UPDATE ? SET state = 'open', probe_token = NULL, probe_expires_at = NULL,
			open_until = now() + make_interval(secs => ?), generation = generation + 1, changed_at = now(),
			last_transition = 'reopened'
			WHERE destination = ? AND probe_token = ?`, bun.Ident(b.cfg.Table), b.cfg.Cooldown.Seconds(), dest, p.token)
		if n == 1 {
			return Reopened, err
		}
		return "", err
	}
	var state []State
	initial := string(Closed)
	if b.cfg.Threshold <= 1 {
		initial = string(Open)
	}
	err := db.NewRaw(`
		INSERT INTO ? AS c (destination, failures, state, open_until, generation, last_transition)
		VALUES (?, 1, ?, CASE WHEN ? = 'open' THEN now() + make_interval(secs => ?) END,
			CASE WHEN ? = 'open' THEN 1 ELSE 0 END, CASE WHEN ? = 'open' THEN 'opened' END)
		ON CONFLICT (destination) DO UPDATE SET
			failures = c.failures + 1,
			state = CASE WHEN c.failures + 1 >= ? THEN 'open' ELSE 'closed' END,
			open_until = CASE WHEN c.failures + 1 >= ? THEN now() + make_interval(secs => ?) ELSE c.open_until END,
			generation = CASE WHEN c.failures + 1 >= ? THEN c.generation + 1 ELSE c.generation END,
			last_transition = CASE WHEN c.failures + 1 >= ? THEN 'opened' ELSE c.last_transition END,
			changed_at = now()
		WHERE c.state = 'closed' AND c.generation = ?
		RETURNING c.state`,
		bun.Ident(b.cfg.Table), dest, initial, initial, b.cfg.Cooldown.Seconds(), initial, initial,
		b.cfg.Threshold, b.cfg.Threshold, b.cfg.Cooldown.Seconds(), b.cfg.Threshold, b.cfg.Threshold,
		p.generation).Scan(ctx, &state)
	if err != nil && !isNoRows(err) {
		return "", fmt.Errorf("breaker: failure %s: %w", dest, err)
	}
	if len(state) == 1 && state[0] == Open {
		return Opened, nil
	}
	return "", nil
}

// State returns dest's circuit state (Closed when it never failed).
func (b *Breaker) State(ctx context.Context, db bun.IDB, dest string) (State, error) {
	var state State
	err := db.NewRaw(`SELECT state FROM ? WHERE destination = ?`, bun.Ident(b.cfg.Table), dest).Scan(ctx, &state)
	if isNoRows(err) {
		return Closed, nil
	}
	if err != nil {
		return "", fmt.Errorf("breaker: state %s: %w", dest, err)
	}
	return state, nil
}

func (b *Breaker) exec(ctx context.Context, db bun.IDB, query string, args ...any) (int64, error) {
	res, err := db.NewRaw(query, args...).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("breaker: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("breaker: %w", err)
	}
	return n, nil
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
