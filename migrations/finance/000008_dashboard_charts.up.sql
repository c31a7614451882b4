-- The on-call dashboard shows cause and trend: the real last error of an event an
-- open circuit holds back, and charts of the last hour and day.

-- When, and by what ('circuit_open', 'paused'), the event was last deferred without a
-- request. The deferral keeps last_error (the answer of the last real request); the
-- dispatcher hastens these rows when the circuit closes or the destination resumes.
-- NULL once any other outcome settles it.
ALTER TABLE finance_outbox ADD COLUMN deferred_at timestamptz, ADD COLUMN deferred_by text;
-- Rows deferred before these columns held last_error = '… deferred without a request'.
UPDATE finance_outbox SET deferred_at = now(), deferred_by = 'circuit_open', last_error = NULL
    WHERE delivery_status = 'pending' AND last_error = 'circuit open: deferred without a request';
UPDATE finance_outbox SET deferred_at = now(), deferred_by = 'paused', last_error = NULL
    WHERE delivery_status = 'pending' AND last_error = 'destination paused: deferred without a request';

-- The dashboard's charts read this per-minute rollup, never the attempt log itself, so
-- drawing the last day costs 1,440 short rows however large the outbox is. Every
-- finance replica rolls up the last minutes of finance_outbox_attempts into it every
-- 15 s (idempotent upserts) and samples the backlog; rows older than 25 h are deleted.
CREATE TABLE finance_outbox_minutes (
    minute              timestamptz PRIMARY KEY,      -- start of the minute
    delivered           int NOT NULL DEFAULT 0,       -- requests that delivered their event
    failed              int NOT NULL DEFAULT 0,       -- requests that dead-lettered their event
    retried             int NOT NULL DEFAULT 0,       -- other requests: the event waits for a retry
    -- written→delivered latency of the events delivered in the minute: counts per
    -- bucket, bucket i holding latencies up to 10 ms·2^(i/3); empty when none
    latency             int[] NOT NULL DEFAULT '{}',
    pending             bigint,                       -- backlog sampled in the minute; NULL: no sample
    oldest_pending_secs double precision              -- age of the oldest pending event then
);
-- The rollup reads the attempts of its last few minutes by start time.
CREATE INDEX finance_outbox_attempts_started_idx ON finance_outbox_attempts (started_at);
