// Package outboxtest gives kit tests (and adopters' tests) an outbox table of the
// shape package outbox documents, in a fresh PostgreSQL database.
package outboxtest

import (
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// Table is the name of the outbox table Setup creates.
const Table = "kit_outbox"

// schema is the reference DDL of an outbox table and its attempt log; a service's own
// migration may add columns and indexes but must keep these.
const schema = `
CREATE TABLE kit_outbox (
    id uuid PRIMARY KEY,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    idempotency_key text NOT NULL UNIQUE,
    destination text NOT NULL,
    aggregate_key text NOT NULL,
    aggregate_seq bigint NOT NULL CHECK (aggregate_seq > 0),
    correlation_id text NOT NULL DEFAULT '',
    delivery_status text NOT NULL DEFAULT 'pending' CHECK (delivery_status IN ('pending','delivered','failed','skipped')),
    delivery_attempts int NOT NULL DEFAULT 0,
    request_count int NOT NULL DEFAULT 0,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamptz,
    last_error text,
    last_status_code int,
    failed_reason text,
    page_owed text[],
    skipped_at timestamptz,
    deferred_at timestamptz,
    deferred_by text,
    traceparent text,
    UNIQUE (aggregate_key, aggregate_seq)
);
CREATE INDEX kit_outbox_due_idx ON kit_outbox (next_attempt_at) WHERE delivery_status = 'pending';
CREATE INDEX kit_outbox_page_owed_idx ON kit_outbox (id) WHERE page_owed IS NOT NULL;
CREATE INDEX kit_outbox_open_idx ON kit_outbox (aggregate_key, aggregate_seq) WHERE delivery_status <> 'delivered';
CREATE INDEX kit_outbox_skipped_idx ON kit_outbox (skipped_at) WHERE delivery_status = 'skipped';
CREATE TABLE kit_outbox_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id uuid NOT NULL REFERENCES kit_outbox (id) ON DELETE CASCADE,
    attempt_no int NOT NULL,
    started_at timestamptz NOT NULL,
    duration_ms int NOT NULL,
    status_code int,
    error_class text,
    error text,
    response_snippet text,
    outcome text NOT NULL,
    UNIQUE (outbox_id, attempt_no)
);`

// Setup returns a fresh database holding an empty outbox table, its URL and its store.
func Setup(t testing.TB) (*bun.DB, string, *outbox.Store) {
	t.Helper()
	fs := fstest.MapFS{
		"000001_outbox.up.sql":   {Data: []byte(schema)},
		"000001_outbox.down.sql": {Data: []byte("DROP TABLE kit_outbox_attempts; DROP TABLE kit_outbox;")},
	}
	db, url := pgtest.NewDB(t, "kitoutbox", fs)
	store, err := outbox.NewStore(Table)
	if err != nil {
		t.Fatal(err)
	}
	return db, url, store
}
