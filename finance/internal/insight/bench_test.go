package insight_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/insight"
)

// BenchmarkChartsOnAMillionAttempts measures the charts on an outbox with 500,000
// events and 1,000,000 attempt rows, all in the last 24 h (about 700 requests a
// minute, every one inside the day's chart): reading each window, and the rollup tick
// every replica runs. Run it with
//
//	go test -run '^$' -bench ChartsOnAMillionAttempts -benchtime 50x ./internal/insight/
//
// The one-time backfill of the whole day (a replica starting on an empty rollup) is
// logged as it happens.
func BenchmarkChartsOnAMillionAttempts(b *testing.B) {
	s := setup(b)
	s.exec(b, `INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
			aggregate_seq, delivery_status, request_count, created_at, delivered_at, last_attempt_at)
		SELECT gen_random_uuid(), 'invoice.paid', '{}', 'k' || g, 'http://127.0.0.1:9/hook', 'agg-' || g, 1,
			CASE g % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'pending' ELSE 'delivered' END, 2, c,
			CASE WHEN g % 100 > 1 THEN c + make_interval(secs => 0.05 + (g % 97) / 20.0) END,
			c + make_interval(secs => 0.05 + (g % 97) / 20.0)
		FROM generate_series(1, 500000) AS g,
			LATERAL (SELECT now() - (g / 500000.0) * interval '24 hours' AS c) AS t`)
	s.exec(b, `INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
		SELECT o.id, n, CASE n WHEN 1 THEN o.created_at + interval '10 ms' ELSE o.last_attempt_at END, 5,
			CASE WHEN n = 1 THEN 'http_Service Unavailable' WHEN o.delivery_status = 'delivered' THEN 'delivered'
				WHEN o.delivery_status = 'failed' THEN 'rejected_by_receiver' ELSE 'timeout' END
		FROM finance_outbox o, generate_series(1, 2) AS n`)
	s.exec(b, `VACUUM ANALYZE finance_outbox`)
	s.exec(b, `VACUUM ANALYZE finance_outbox_attempts`)
	var attempts int
	require.NoError(b, s.db.NewRaw(`SELECT count(*) FROM finance_outbox_attempts`).Scan(s.ctx, &attempts))
	require.Equal(b, 1_000_000, attempts)

	start := time.Now()
	require.NoError(b, s.store.Roll(s.ctx))
	b.Logf("backfill of 24 h from %d attempt rows: %s", attempts, time.Since(start).Round(time.Millisecond))
	s.exec(b, `VACUUM ANALYZE finance_outbox_minutes`)

	for _, w := range []insight.Window{insight.Hour, insight.Day} {
		b.Run("read_"+w.Key, func(b *testing.B) {
			for b.Loop() {
				c, err := s.store.Charts(s.ctx, w)
				require.NoError(b, err)
				require.NotEmpty(b, c.Points)
			}
		})
	}
	b.Run("roll_tick", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, s.store.Roll(s.ctx))
		}
	})
}
