package insight

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// RollEvery is how often each replica rolls up the recent minutes: often enough that
// a chart is never more than a quarter of a minute behind.
const RollEvery = "@every 15s"

// Roll brings the per-minute rollup up to date: it recounts from the attempt log the
// requests of every minute since two minutes before the newest rolled-up one (a
// request is logged when it ends, after the minute it started in; at most 24 h back,
// so a restart after an outage fills the gap), samples the backlog into the current
// minute, and deletes minutes older than 25 h. One replica rolls up at a time (an
// advisory lock; the others skip the tick), every statement is an idempotent upsert,
// and times are the database's.
//
// A request counts in the minute it started: delivered when it delivered its event,
// failed when it was the last request of an event now failed (it dead-lettered it),
// retried otherwise.
func (s *Store) Roll(ctx context.Context) error {
	_, err := pgdb.WithTryAdvisoryLock(ctx, s.db, "finance_outbox_minutes", func(ctx context.Context, conn bun.IDB) error {
		// The start is read first and bound as a value, so the planner sees a short
		// range of the started_at index rather than guessing at a subquery's.
		var since time.Time
		err := conn.NewRaw(`SELECT greatest(date_trunc('minute', now()) - interval '24 hours',
			coalesce(max(minute), '-infinity') - interval '2 minutes') FROM finance_outbox_minutes`).Scan(ctx, &since)
		if err != nil {
			return fmt.Errorf("insight: roll up attempts: %w", err)
		}
		if _, err := conn.NewRaw(rollupSQL, latencyBuckets-1, since, latencyBuckets-1).Exec(ctx); err != nil {
			return fmt.Errorf("insight: roll up attempts: %w", err)
		}
		if _, err := conn.NewRaw(sampleSQL).Exec(ctx); err != nil {
			return fmt.Errorf("insight: sample backlog: %w", err)
		}
		if _, err := conn.NewRaw(`DELETE FROM finance_outbox_minutes WHERE minute < now() - interval '25 hours'`).Exec(ctx); err != nil {
			return fmt.Errorf("insight: purge rollup: %w", err)
		}
		return nil
	})
	return err
}

// rollupSQL recounts the minutes from a start; its parameters are the last latency
// bucket, the start, and the last latency bucket again. One pass over the requests
// groups them by minute and latency bucket (none for a request that delivered
// nothing, or whose event has since been sent again); the minutes' counts and dense
// histograms are read from those groups, a minute's retried requests being the rest of
// its requests.
//
// A delivered request's bucket is ceil(3·log2(latency / 10 ms)), the first whose bound
// (bucketBound) is not below the latency. It is computed in float8: numeric's log cost
// 22 µs a row, most of a roll after a backlog. float8's error in the latency and the
// logarithm is about 1e-14 of the logarithm; the 1e-12 taken off it keeps a latency
// that equals a bound in that bound's bucket where rounding pushes it up (at
// 20,971,520 ms, 7e-15 above 63). It moves no other latency: up to the last bound
// (bucket 70, 29 h), a whole number of microseconds above a bound is at least 1.6e-11
// above it in the logarithm (the closest, 66,580,425.819 ms above bound 68).
//
// A request's minute is date_bin's, which is date_trunc's in every time zone whose
// offset is whole minutes (all of today's), without converting each row to the
// session's zone. That and the single pass halve a recount's time.
const rollupSQL = `
WITH g AS (
	SELECT date_bin('1 minute', a.started_at, '2000-01-01 00:00:00+00') AS minute,
		CASE WHEN a.outcome = 'delivered' THEN least(?, greatest(0, ceil(3 * ln(greatest(
			date_part('epoch', o.delivered_at - o.created_at) * 1000, 10) / 10) / ln(2) - 1e-12)))::int END AS b,
		count(*) AS requests, count(*) FILTER (WHERE a.outcome = 'delivered') AS delivered,
		count(*) FILTER (WHERE a.outcome <> 'delivered'
			AND o.delivery_status = 'failed' AND a.attempt_no = o.request_count) AS failed
	FROM finance_outbox_attempts a JOIN finance_outbox o ON o.id = a.outbox_id
	WHERE a.started_at >= ?
	GROUP BY 1, 2
), counts AS (
	SELECT minute, sum(delivered) AS delivered, sum(failed) AS failed,
		sum(requests) - sum(delivered) - sum(failed) AS retried
	FROM g GROUP BY minute
), dense AS (
	SELECT c.minute, CASE WHEN c.delivered = 0 THEN '{}'::int[]
		ELSE array_agg(coalesce(h.delivered, 0)::int ORDER BY s.b) END AS latency
	FROM counts c CROSS JOIN generate_series(0, ?) AS s(b)
	LEFT JOIN g h ON h.minute = c.minute AND h.b = s.b
	GROUP BY c.minute, c.delivered
)
INSERT INTO finance_outbox_minutes AS m (minute, delivered, failed, retried, latency)
SELECT c.minute, c.delivered, c.failed, c.retried, d.latency FROM counts c JOIN dense d USING (minute)
ON CONFLICT (minute) DO UPDATE SET delivered = excluded.delivered, failed = excluded.failed,
	retried = excluded.retried, latency = excluded.latency`

// sampleSQL records the backlog now: an index-only count of the pending rows.
const sampleSQL = `
INSERT INTO finance_outbox_minutes AS m (minute, pending, oldest_pending_secs)
SELECT date_trunc('minute', now()), count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)
FROM finance_outbox WHERE delivery_status = 'pending'
ON CONFLICT (minute) DO UPDATE SET pending = excluded.pending, oldest_pending_secs = excluded.oldest_pending_secs`
