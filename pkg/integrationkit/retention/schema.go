package retention

import "strings"

// ArchiveSchema returns the DDL of the archive tables ArchiveOutbox moves the events
// of the outbox named outbox into: <outbox>_archive and <outbox>_attempts_archive,
// with the columns of their sources at the time they are created (LIKE … INCLUDING
// DEFAULTS; no constraint but NOT NULL, no identity), id as primary key, and the
// indexes purging and looking up archived events read. Run it after outbox.Schema. A
// service's migrations must give its archive exactly this shape (a test of each
// service compares them), and the kit's tests create their archive from it.
//
// A column later added to the outbox should be added to the archive in the same
// migration; until then ArchiveOutbox drops it when archiving.
func ArchiveSchema(outbox string) string {
	return strings.ReplaceAll(`CREATE TABLE {o}_archive (
    LIKE {o} INCLUDING DEFAULTS,
    archived_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id)
);
CREATE INDEX {o}_archive_delivered_idx ON {o}_archive (delivered_at);
CREATE INDEX {o}_archive_key_idx ON {o}_archive (idempotency_key);
CREATE INDEX {o}_archive_aggregate_idx ON {o}_archive (aggregate_key, aggregate_seq);

CREATE TABLE {o}_attempts_archive (
    LIKE {o}_attempts INCLUDING DEFAULTS,
    PRIMARY KEY (id),
    FOREIGN KEY (outbox_id) REFERENCES {o}_archive (id) ON DELETE CASCADE
);
CREATE INDEX {o}_attempts_archive_outbox_idx ON {o}_attempts_archive (outbox_id);
`, "{o}", outbox)
}
