DROP TABLE IF EXISTS finance_outbox_attempts;
DROP TABLE IF EXISTS finance_outbox;
DROP TABLE IF EXISTS idempotency_keys;
DROP TABLE IF EXISTS refunds;
DROP TABLE IF EXISTS payments;
DROP TABLE IF EXISTS invoice_lines;
DROP TABLE IF EXISTS invoices;
