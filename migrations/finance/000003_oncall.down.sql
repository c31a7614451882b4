DROP TABLE IF EXISTS finance_reconciliations;
DROP TABLE IF EXISTS finance_outbox_attempts_archive;
DROP TABLE IF EXISTS finance_outbox_archive;
DROP INDEX IF EXISTS finance_outbox_pending_created_idx;
DROP INDEX IF EXISTS finance_outbox_delivered_idx;
DROP TABLE IF EXISTS finance_alerts;
