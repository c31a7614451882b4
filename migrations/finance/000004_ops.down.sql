DROP INDEX IF EXISTS finance_outbox_failed_idx;
