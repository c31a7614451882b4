package idempotency

import "strings"

// Schema returns the DDL of a key table named table (Config.Table, by default
// DefaultTable), with the index Purge reads: a service's migrations must give its
// table exactly this shape (a test of each service compares them), and the kit's
// tests create their table from it.
func Schema(table string) string {
	return strings.ReplaceAll(`CREATE TABLE {t} (
    principal        text NOT NULL,
    key              text NOT NULL,
    request_hash     bytea NOT NULL,
    state            text NOT NULL CHECK (state IN ('in_flight', 'done')),
    response_status  int,
    response_headers jsonb,
    response_body    bytea,
    locked_at        timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, key)
);
CREATE INDEX {t}_created_idx ON {t} (created_at);
`, "{t}", table)
}
