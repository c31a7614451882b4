-- finance: invoices, their payments and refunds, the idempotency store of the API,
-- and the transactional outbox with its attempt log.

CREATE TABLE invoices (
    id          uuid PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    number      text NOT NULL UNIQUE,
    customer_id text NOT NULL,
    currency    char(3) NOT NULL,
    total_minor bigint NOT NULL CHECK (total_minor > 0),
    paid_minor  bigint NOT NULL DEFAULT 0 CHECK (paid_minor >= 0 AND paid_minor <= total_minor),
    status      text NOT NULL CHECK (status IN ('issued', 'partially_paid', 'paid', 'refunded')),
    -- last per-invoice event sequence handed to the outbox; bumped under the row lock
    event_seq   bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invoices_status_seq_idx ON invoices (status, seq);
CREATE INDEX invoices_customer_seq_idx ON invoices (customer_id, seq);

CREATE TABLE invoice_lines (
    invoice_id       uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    line_no          int NOT NULL,
    description      text NOT NULL,
    quantity         bigint NOT NULL CHECK (quantity > 0),
    unit_price_minor bigint NOT NULL CHECK (unit_price_minor >= 0),
    amount_minor     bigint NOT NULL CHECK (amount_minor >= 0),
    PRIMARY KEY (invoice_id, line_no)
);

CREATE TABLE payments (
    payment_id   text PRIMARY KEY,
    invoice_id   uuid NOT NULL REFERENCES invoices (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_invoice_idx ON payments (invoice_id);

CREATE TABLE refunds (
    refund_id    text PRIMARY KEY,
    invoice_id   uuid NOT NULL REFERENCES invoices (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    reason       text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_invoice_idx ON refunds (invoice_id);

-- Stripe-style Idempotency-Key store: one row per (principal, key).
CREATE TABLE idempotency_keys (
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
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE finance_outbox (
    id                uuid PRIMARY KEY,
    event_type        text NOT NULL,
    payload           jsonb NOT NULL,
    idempotency_key   text NOT NULL UNIQUE,
    destination       text NOT NULL,
    aggregate_key     text NOT NULL,
    aggregate_seq     bigint NOT NULL CHECK (aggregate_seq > 0),
    correlation_id    text NOT NULL DEFAULT '',
    delivery_status   text NOT NULL DEFAULT 'pending'
                      CHECK (delivery_status IN ('pending', 'delivered', 'failed')),
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
    UNIQUE (aggregate_key, aggregate_seq)
) WITH (fillfactor = 80);

-- The claim reads only pending rows, so its cost follows the backlog, not the history.
CREATE INDEX finance_outbox_due_idx ON finance_outbox (next_attempt_at)
    WHERE delivery_status = 'pending';
-- Head-of-line check: is there an earlier undelivered event of the same aggregate?
CREATE INDEX finance_outbox_open_aggregate_idx ON finance_outbox (aggregate_key, aggregate_seq)
    WHERE delivery_status <> 'delivered';
CREATE INDEX finance_outbox_created_idx ON finance_outbox (created_at);

CREATE TABLE finance_outbox_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id        uuid NOT NULL REFERENCES finance_outbox (id) ON DELETE CASCADE,
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
