DROP INDEX finance_outbox_attempts_started_idx;
DROP TABLE finance_outbox_minutes;
UPDATE finance_outbox SET last_error = CASE deferred_by
        WHEN 'paused' THEN 'destination paused: deferred without a request'
        ELSE 'circuit open: deferred without a request' END
    WHERE delivery_status = 'pending' AND deferred_at IS NOT NULL;
ALTER TABLE finance_outbox DROP COLUMN deferred_at, DROP COLUMN deferred_by;
