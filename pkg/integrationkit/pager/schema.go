package pager

import "strings"

// Schema returns the DDL of an alert table named table, with the index Run's claim of
// due alerts reads: a service's migrations must give its table exactly this shape (a
// test of each service compares them), and the kit's tests create their table from it.
func Schema(table string) string {
	return strings.ReplaceAll(`CREATE TABLE {t} (
    alert_key         text PRIMARY KEY,
    kind              text NOT NULL,
    title             text NOT NULL,
    unsent_count      bigint NOT NULL DEFAULT 0,   -- occurrences not yet in a sent message
    total_count       bigint NOT NULL DEFAULT 0,
    sample            jsonb NOT NULL DEFAULT '{}', -- the latest occurrence
    first_seen_at     timestamptz NOT NULL DEFAULT now(),
    last_seen_at      timestamptz NOT NULL DEFAULT now(),
    window_started_at timestamptz NOT NULL DEFAULT now(),
    next_send_after   timestamptz NOT NULL DEFAULT now(),
    sent_at           timestamptz,
    send_failures     int NOT NULL DEFAULT 0,
    last_send_error   text,
    claim_token       uuid,
    claim_expires_at  timestamptz
);
CREATE INDEX {t}_due_idx ON {t} (next_send_after) WHERE unsent_count > 0;
`, "{t}", table)
}
