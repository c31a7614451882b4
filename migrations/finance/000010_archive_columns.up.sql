-- The archive has every column of the outbox (retention.ArchiveSchema): the columns
-- added to finance_outbox since 000003 were not archived, so archived events lost
-- their trace context. Nullable columns without a default rewrite nothing; archiving
-- copies the columns both tables have, so replicas of the release before keep working
-- during a roll.
ALTER TABLE finance_outbox_archive
    ADD COLUMN page_owed text[],
    ADD COLUMN skipped_at timestamptz,
    ADD COLUMN deferred_at timestamptz,
    ADD COLUMN deferred_by text,
    ADD COLUMN traceparent text;
