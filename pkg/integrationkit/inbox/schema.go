package inbox

import "strings"

// Schema returns the DDL of an inbox table named table, with the index purging by age
// reads (retention.Purge on received_at). A service's table has exactly these columns,
// constraints and indexes, plus the columns it fills through Item.Columns and any
// index on them: a test of each service compares its migrations with this, naming
// those additions. The kit's tests create their table from it.
func Schema(table string) string {
	return strings.ReplaceAll(`CREATE TABLE {t} (
    idempotency_key text PRIMARY KEY,
    payload_hash    bytea NOT NULL,
    result          text NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX {t}_received_idx ON {t} (received_at);
`, "{t}", table)
}
