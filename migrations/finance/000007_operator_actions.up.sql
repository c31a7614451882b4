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

-- The audit log: every operator action (retry, skip, resend, retarget, pause, resume),
-- who asked, when, why and how many events it changed, written in the transaction of
-- the change it records. Kept for good: retention does not touch it.
CREATE TABLE finance_operator_actions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL CHECK (actor <> ''),
    action      text NOT NULL CHECK (action IN ('retry', 'skip', 'resend', 'retarget', 'pause', 'resume')),
    reason      text NOT NULL CHECK (btrim(reason, E' \t\r\n') <> ''),
    event_count int NOT NULL CHECK (event_count >= 0),  -- events the action changed
    event_id    uuid,        -- an action on one event
    invoice_id  uuid,        -- that event's invoice, or the invoice a filter named
    filter      jsonb,       -- an action by filter: the filter it applied
    destination text         -- pause, resume: the destination; retarget: where events moved
);
CREATE INDEX finance_operator_actions_invoice_idx ON finance_operator_actions (invoice_id, id)
    WHERE invoice_id IS NOT NULL;

-- The events each action changed, so an event's detail and its invoice's trace show
-- every action that touched it, by filter too, after retention archived it as well.
CREATE TABLE finance_operator_action_events (
    action_id  bigint NOT NULL REFERENCES finance_operator_actions (id),
    event_id   uuid NOT NULL,
    invoice_id uuid NOT NULL,
    PRIMARY KEY (event_id, action_id)
);
CREATE INDEX finance_operator_action_events_invoice_idx ON finance_operator_action_events (invoice_id, action_id);

-- Reconciliation counts the events operators skipped in its window: resolved, not
-- missing.
ALTER TABLE finance_reconciliations ADD COLUMN skipped_count int NOT NULL DEFAULT 0;
