-- Operations: the dashboard, the ops API and `finance outbox list --status=failed`
-- page through dead letters newest first without reading the delivered history.
CREATE INDEX finance_outbox_failed_idx ON finance_outbox (created_at DESC, id DESC)
    WHERE delivery_status = 'failed';
