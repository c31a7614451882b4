ALTER TABLE finance_outbox DROP COLUMN traceparent;
