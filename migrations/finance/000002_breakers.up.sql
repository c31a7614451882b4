-- One circuit per delivery destination, shared by every dispatcher replica.
CREATE TABLE finance_breakers (
    destination      text PRIMARY KEY,
    state            text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    failures         int NOT NULL DEFAULT 0,      -- consecutive retryable failures
    generation       bigint NOT NULL DEFAULT 0,   -- bumped on every open/close
    open_until       timestamptz,
    probe_token      uuid,
    probe_expires_at timestamptz,
    changed_at       timestamptz NOT NULL DEFAULT now()
);
