package outbox

import "github.com/jackc/pgx/v5"

// statements are the per-event statements of one outbox table, fixed at NewStore so
// pgx prepares each once per connection (pgdb.Prepared; the claims and the settlement
// beside their settings, pgdb.Local).
type statements struct {
	enqueue, claim, claimExcept, settle, nextDue string
}

func newStatements(table string) statements {
	t, attempts := pgx.Identifier{table}.Sanitize(), pgx.Identifier{table + "_attempts"}.Sanitize()
	return statements{
		// The row and the dispatchers' wake-up in one round trip ($10 the channel): the
		// NOTIFY is delivered when the writer's transaction commits, never before.
		enqueue: `WITH ins AS (INSERT INTO ` + t + ` (id, event_type, payload, idempotency_key, destination,
			aggregate_key, aggregate_seq, correlation_id, traceparent)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, '')) RETURNING 1)
			SELECT pg_notify($10, '') FROM ins`,
		// Run by every dispatcher loop that finds nothing to claim.
		nextDue: `SELECT EXTRACT(EPOCH FROM (min(next_attempt_at) - now()))::float8
			FROM ` + t + ` WHERE delivery_status = 'pending' AND next_attempt_at > now()`,
		// $1 the batch size, $2 the owner, $3 the lease in seconds.
		claim: claimSQL(t, ""),
		// The same, $4 destinations to leave in the queue: a statement of its own, so
		// the usual claim's cached plan never allows for a filter it does not have.
		claimExcept: claimSQL(t, "AND NOT (o.destination = ANY ($4::text[]))"),
		// One array per column of the settlements (see columns). The update returns
		// what the attempt rows need, so they are written without joining its rows to
		// the values again (a join PostgreSQL made a nested loop: 160,000 comparisons,
		// half the statement's time, for a batch of 400). The condition on $1 alone is
		// what lets the settlement's one plan (settlePlan) reach the outbox by its
		// primary key only, whatever the statistics it was made with.
		settle: `
		WITH v AS (
			SELECT * FROM unnest($1::text[]::uuid[], $2::text[]::uuid[], $3::text[], $4::int[], $5::int[],
			                     $6::float8[], $7::int[], $8::text[], $9::text[], $10::text[], $11::float8[],
			                     $12::int[], $13::text[], $14::text[], $15::text[], $16::text[])
			AS v(id, token, status, counted, sent, retry_secs, code, error, failed_reason, error_class,
			     started, duration_ms, snippet, label, page, deferred_by)
		), upd AS (
			UPDATE ` + t + ` AS o SET
				delivery_status = v.status,
				delivery_attempts = o.delivery_attempts + v.counted,
				request_count = o.request_count + v.sent,
				last_attempt_at = CASE WHEN v.sent = 1 THEN now() ELSE o.last_attempt_at END,
				next_attempt_at = CASE WHEN v.status = 'pending' THEN now() + make_interval(secs => v.retry_secs) ELSE o.next_attempt_at END,
				delivered_at = CASE WHEN v.status = 'delivered' THEN now() ELSE o.delivered_at END,
				last_status_code = CASE WHEN v.sent = 1 THEN NULLIF(v.code, 0) ELSE o.last_status_code END,
				last_error = CASE WHEN v.sent = 1 OR v.error <> '' THEN NULLIF(v.error, '') ELSE o.last_error END,
				failed_reason = NULLIF(v.failed_reason, ''),
				deferred_at = CASE WHEN v.deferred_by <> '' THEN now() END,
				deferred_by = NULLIF(v.deferred_by, ''),
				page_owed = CASE WHEN v.page = '' OR v.page = ANY(coalesce(o.page_owed, '{}')) THEN o.page_owed
					ELSE coalesce(o.page_owed, '{}') || v.page END,
				lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
			FROM v WHERE o.id = ANY ($1::text[]::uuid[]) AND o.id = v.id AND o.lease_token = v.token
			RETURNING o.id, o.request_count, v.sent, v.started, v.duration_ms, v.code, v.error_class,
			          v.error, v.snippet, v.label
		), ins AS (
			INSERT INTO ` + attempts + ` (outbox_id, attempt_no, started_at, duration_ms, status_code,
			               error_class, error, response_snippet, outcome)
			SELECT id, request_count, to_timestamp(started), duration_ms, NULLIF(code, 0),
			       NULLIF(error_class, ''), NULLIF(error, ''), NULLIF(snippet, ''), label
			FROM upd WHERE sent = 1
		)
		SELECT id FROM upd`,
	}
}

// claimSQL is the claim of table t, its candidates also meeting filter.
func claimSQL(t, filter string) string {
	return `
		WITH due AS (
			SELECT o.id FROM ` + t + ` AS o
			WHERE o.delivery_status = 'pending'
			  AND o.next_attempt_at <= now()
			  AND (o.lease_expires_at IS NULL OR o.lease_expires_at < now())
			  ` + filter + `
			  AND NOT EXISTS (
				SELECT 1 FROM ` + t + ` AS p
				WHERE p.aggregate_key = o.aggregate_key
				  AND p.aggregate_seq < o.aggregate_seq
				  AND p.delivery_status IN ('pending', 'failed')
				OFFSET 0)
			ORDER BY o.next_attempt_at
			LIMIT $1
			FOR UPDATE OF o SKIP LOCKED
		)
		UPDATE ` + t + ` AS o
		SET lease_owner = $2, lease_token = gen_random_uuid(),
		    lease_expires_at = now() + make_interval(secs => $3::float8)
		FROM due WHERE o.id = due.id
		RETURNING o.id, o.event_type, o.payload, o.idempotency_key, o.destination,
		          o.aggregate_key, o.aggregate_seq, o.correlation_id, o.created_at,
		          o.delivery_attempts, o.request_count, o.lease_token, coalesce(o.traceparent, '')`
}
