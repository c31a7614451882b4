-- The dashboard's sign-ins, shared by every replica: logout and expiry end a session
-- everywhere at once, and guessing tokens is throttled across the cluster. Every time
-- here is the database's.

-- A live session: the SHA-256 of its cookie value (never a value that would work as a
-- cookie), who signed in, and when it ends. A request is admitted by one lookup of the
-- primary key; expired rows are deleted by the next sign-in.
CREATE TABLE finance_dashboard_sessions (
    session_hash bytea PRIMARY KEY,
    principal    text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX finance_dashboard_sessions_expires_idx ON finance_dashboard_sessions (expires_at);

-- Sign-in attempts not proven right: failures, and attempts whose token is being
-- checked. A correct token deletes its attempt; rows older than the throttle's window
-- are deleted by the next attempt. The throttle counts the window's rows, which its
-- global ceiling keeps to about a hundred, through the index on attempted_at.
CREATE TABLE finance_dashboard_sign_in_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client       text        NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX finance_dashboard_sign_in_attempts_at_idx ON finance_dashboard_sign_in_attempts (attempted_at);
