package breaker

import "strings"

// Schema returns the DDL of a circuit table named table: what a service's migration
// creates and what the kit's tests use.
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
