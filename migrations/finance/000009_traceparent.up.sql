-- The W3C trace context of the span that wrote the event (the clerk's request, through
-- the outbox write), so the dispatcher's claim, request and settlement, and logistics'
-- transaction, join the request's trace. NULL when the writer traced nothing (tracing
-- off): the column then costs a null bitmap bit. Adding a nullable column without a
-- default rewrites nothing, and replicas of the release before keep inserting without
-- it during a roll.
ALTER TABLE finance_outbox ADD COLUMN traceparent text;
