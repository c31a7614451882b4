ALTER TABLE finance_reconciliations DROP COLUMN skipped_count;
DROP TABLE finance_operator_action_events;
DROP TABLE finance_operator_actions;
ALTER TABLE finance_breakers DROP COLUMN paused_at;
DROP INDEX finance_outbox_skipped_idx;
-- A skipped event goes back to the dead letter it was.
UPDATE finance_outbox SET delivery_status = 'failed' WHERE delivery_status = 'skipped';
ALTER TABLE finance_outbox DROP COLUMN skipped_at;
ALTER TABLE finance_outbox DROP CONSTRAINT finance_outbox_delivery_status_check;
ALTER TABLE finance_outbox ADD CONSTRAINT finance_outbox_delivery_status_check
    CHECK (delivery_status IN ('pending', 'delivered', 'failed'));
