package outbox

import "strings"

// Schema returns the DDL of an outbox table named table and of its attempt log
// <table>_attempts, at their current shape, with every index the Store's statements
// rely on: a service's migrations must give its tables exactly this shape (a test of
// each service compares them), and the kit's tests create their tables from it.
//
// fillfactor 80 leaves room on each page for the updates a delivery makes (lease,
// attempt, settlement), so most of them stay heap-only.
func Schema(table string) string {
	return strings.ReplaceAll(`CREATE TABLE {t} (
    id                uuid PRIMARY KEY,
    event_type        text NOT NULL,
    payload           jsonb NOT NULL,
    idempotency_key   text NOT NULL UNIQUE,
    destination       text NOT NULL,
    aggregate_key     text NOT NULL,
    aggregate_seq     bigint NOT NULL CHECK (aggregate_seq > 0),
    correlation_id    text NOT NULL DEFAULT '',
    delivery_status   text NOT NULL DEFAULT 'pending'
                      CHECK (delivery_status IN ('pending', 'delivered', 'failed', 'skipped')),
    delivery_attempts int NOT NULL DEFAULT 0,   -- attempts counted against the budget
    request_count     int NOT NULL DEFAULT 0,   -- every request sent (X-Attempt)
    last_attempt_at   timestamptz,
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at      timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    lease_owner       text,
    lease_token       uuid,
    lease_expires_at  timestamptz,
    last_error        text,
    last_status_code  int,
    failed_reason     text,
    page_owed         text[],        -- pages the settled attempts owe, until a pager takes them
    skipped_at        timestamptz,
    deferred_at       timestamptz,   -- last deferred without a request ...
    deferred_by       text,          -- ... by 'circuit_open' or 'paused'
    traceparent       text,          -- W3C trace context of the writer's span
    UNIQUE (aggregate_key, aggregate_seq)
) WITH (fillfactor = 80);

-- The claim reads only pending rows, so its cost follows the backlog, not the history.
CREATE INDEX {t}_due_idx ON {t} (next_attempt_at) WHERE delivery_status = 'pending';
-- Head-of-line test: is there an earlier undelivered event of the same aggregate?
CREATE INDEX {t}_open_aggregate_idx ON {t} (aggregate_key, aggregate_seq)
    WHERE delivery_status <> 'delivered';
-- Filters by creation time, and the oldest pending event (depth, pending age).
CREATE INDEX {t}_created_idx ON {t} (created_at);
CREATE INDEX {t}_pending_created_idx ON {t} (created_at) WHERE delivery_status = 'pending';
-- Retention moves delivered events by delivery time.
CREATE INDEX {t}_delivered_idx ON {t} (delivered_at) WHERE delivery_status = 'delivered';
-- Dead letters, newest first, without reading the delivered history.
CREATE INDEX {t}_failed_idx ON {t} (created_at DESC, id DESC) WHERE delivery_status = 'failed';
CREATE INDEX {t}_skipped_idx ON {t} (skipped_at) WHERE delivery_status = 'skipped';
-- Pages owed: a pager takes them without scanning the table.
CREATE INDEX {t}_page_owed_idx ON {t} (id) WHERE page_owed IS NOT NULL;

CREATE TABLE {t}_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id        uuid NOT NULL REFERENCES {t} (id) ON DELETE CASCADE,
    attempt_no       int NOT NULL,
    started_at       timestamptz NOT NULL,
    duration_ms      int NOT NULL,
    status_code      int,
    error_class      text,
    error            text,
    response_snippet text,
    outcome          text NOT NULL,
    UNIQUE (outbox_id, attempt_no)
);
`, "{t}", table)
}
