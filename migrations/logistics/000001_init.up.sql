-- logistics: shipments moved by finance events, and the inbox that applies each
-- event key exactly once.

CREATE TABLE shipments (
    id             uuid PRIMARY KEY,
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    invoice_id     uuid NOT NULL UNIQUE,
    invoice_number text NOT NULL DEFAULT '',
    customer_id    text NOT NULL DEFAULT '',
    state          text NOT NULL CHECK (state IN ('awaiting_payment', 'waiting', 'picking', 'packed',
                                                  'shipped', 'delivered', 'cancelled', 'return_pending')),
    version        bigint NOT NULL DEFAULT 1,
    -- highest finance event sequence applied to this shipment; older ones are stale
    last_event_seq bigint NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shipments_state_seq_idx ON shipments (state, seq);

CREATE TABLE shipment_history (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    shipment_id     uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
    from_state      text,
    to_state        text NOT NULL,
    version         bigint NOT NULL,
    cause           text NOT NULL,          -- event type or 'warehouse'
    idempotency_key text,
    at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shipment_history_shipment_idx ON shipment_history (shipment_id, id);

CREATE TABLE logistics_processed_events (
    idempotency_key text PRIMARY KEY,
    payload_hash    bytea NOT NULL,
    event_id        text NOT NULL,
    event_type      text NOT NULL,
    invoice_id      uuid,
    result          text NOT NULL,          -- applied | stale
    received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX logistics_processed_events_received_idx ON logistics_processed_events (received_at);
CREATE INDEX logistics_processed_events_invoice_idx ON logistics_processed_events (invoice_id);
