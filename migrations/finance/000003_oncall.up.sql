-- On-call: paging state shared by every replica, the outbox archive that retention
-- moves delivered events into, and the results of reconciliation with logistics.

-- One row per alert key: occurrences are counted here and sent as one message per
-- interval, so replicas deduplicate and rate-limit together.
CREATE TABLE finance_alerts (
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
CREATE INDEX finance_alerts_due_idx ON finance_alerts (next_send_after) WHERE unsent_count > 0;

-- Retention and reconciliation read delivered events by delivery time; the pending-age
-- check and metrics read the oldest pending event.
CREATE INDEX finance_outbox_delivered_idx ON finance_outbox (delivered_at)
    WHERE delivery_status = 'delivered';
CREATE INDEX finance_outbox_pending_created_idx ON finance_outbox (created_at)
    WHERE delivery_status = 'pending';

-- Delivered events older than the retention window, with their attempts.
CREATE TABLE finance_outbox_archive (
    LIKE finance_outbox INCLUDING DEFAULTS,
    archived_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id)
);
CREATE INDEX finance_outbox_archive_delivered_idx ON finance_outbox_archive (delivered_at);
CREATE INDEX finance_outbox_archive_key_idx ON finance_outbox_archive (idempotency_key);
CREATE INDEX finance_outbox_archive_aggregate_idx ON finance_outbox_archive (aggregate_key, aggregate_seq);

CREATE TABLE finance_outbox_attempts_archive (
    LIKE finance_outbox_attempts INCLUDING DEFAULTS,
    PRIMARY KEY (id),
    FOREIGN KEY (outbox_id) REFERENCES finance_outbox_archive (id) ON DELETE CASCADE
);
CREATE INDEX finance_outbox_attempts_archive_outbox_idx ON finance_outbox_attempts_archive (outbox_id);

-- One row per reconciliation run; the dashboard shows the latest.
CREATE TABLE finance_reconciliations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz NOT NULL DEFAULT now(),
    window_from     timestamptz NOT NULL,
    window_to       timestamptz NOT NULL,
    delivered_count int NOT NULL DEFAULT 0,   -- keys finance marked delivered in the window
    processed_count int NOT NULL DEFAULT 0,   -- keys logistics processed in the window
    missing_count   int NOT NULL DEFAULT 0,   -- delivered but never applied
    unknown_count   int NOT NULL DEFAULT 0,   -- applied but unknown to finance
    overdue_count   int NOT NULL DEFAULT 0,   -- pending far past their schedule
    missing         jsonb NOT NULL DEFAULT '[]',
    unknown         jsonb NOT NULL DEFAULT '[]',
    overdue         jsonb NOT NULL DEFAULT '[]',
    error           text
);
CREATE INDEX finance_reconciliations_finished_idx ON finance_reconciliations (finished_at);
