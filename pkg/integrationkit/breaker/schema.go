package breaker

import "strings"

// Schema returns the DDL of a circuit table named table: a service's migrations must
// give its table exactly this shape (a test of each service compares them), and the
// kit's tests create their table from it.
func Schema(table string) string {
	return strings.ReplaceAll(`CREATE TABLE {t} (
    destination          text PRIMARY KEY,
    state                text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    failures             int NOT NULL DEFAULT 0,      -- consecutive receiver faults
    generation           bigint NOT NULL DEFAULT 0,   -- bumped on every open/close
    open_until           timestamptz,
    probe_token          uuid,
    probe_expires_at     timestamptz,
    changed_at           timestamptz NOT NULL DEFAULT now(),
    last_transition      text CHECK (last_transition IN ('opened', 'reopened', 'closed')),
    announced_generation bigint NOT NULL DEFAULT 0,   -- the generation a pager announced
    paused_at            timestamptz                  -- set while an operator pauses the destination
);`, "{t}", table)
}
