-- The on-call dashboard shows cause and trend: the real last error of an event an
-- open circuit holds back, and charts of the last hour and day.

-- When the destination's open circuit last deferred the event without a request. The
-- deferral keeps last_error (the answer of the last real request); the dispatcher
-- hastens these rows when the circuit closes. NULL once any other outcome settles it.
ALTER TABLE finance_outbox ADD COLUMN deferred_at timestamptz;
-- Rows deferred before this column held last_error = 'circuit open: …' instead.
UPDATE finance_outbox SET deferred_at = now(), last_error = NULL
    WHERE delivery_status = 'pending' AND last_error = 'circuit open: deferred without a request';
