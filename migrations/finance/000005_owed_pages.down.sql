ALTER TABLE finance_breakers DROP COLUMN announced_generation, DROP COLUMN last_transition;
DROP INDEX finance_outbox_page_owed_idx;
ALTER TABLE finance_outbox DROP COLUMN page_owed;
