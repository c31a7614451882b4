ALTER TABLE finance_outbox_archive
    DROP COLUMN page_owed,
    DROP COLUMN skipped_at,
    DROP COLUMN deferred_at,
    DROP COLUMN deferred_by,
    DROP COLUMN traceparent;
