-- Operator actions: on-call skips a dead letter, resends a delivered event, moves
-- undelivered events to another destination and pauses a destination, without a
-- database console.

-- A skipped event is a dead letter an operator gave up: never sent again, and no
-- longer holding back its invoice's later events. The claim's head test asks for an
-- earlier event that is pending or failed; finance_outbox_open_aggregate_idx (every
-- row not delivered) still answers it, since that test implies its predicate, so old
-- and new replicas share the index during a roll. Skipped rows stay in it: a few,
-- made by hand.
ALTER TABLE finance_outbox DROP CONSTRAINT finance_outbox_delivery_status_check;
ALTER TABLE finance_outbox ADD CONSTRAINT finance_outbox_delivery_status_check
    CHECK (delivery_status IN ('pending', 'delivered', 'failed', 'skipped'));
ALTER TABLE finance_outbox ADD COLUMN skipped_at timestamptz;
-- Stats count skipped events, reconciliation those skipped in its window.
CREATE INDEX finance_outbox_skipped_idx ON finance_outbox (skipped_at)
    WHERE delivery_status = 'skipped';

-- A paused destination: every replica's dispatcher reads it with the circuit, in the
-- statement it already runs before each request, and defers the destination's events
-- without a request until an operator resumes it.
ALTER TABLE finance_breakers ADD COLUMN paused_at timestamptz;

-- Reconciliation counts the events operators skipped in its window: resolved, not
-- missing.
ALTER TABLE finance_reconciliations ADD COLUMN skipped_count int NOT NULL DEFAULT 0;
