package insight_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"go.uber.org/goleak"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/insight"
	"handoff/pkg/integrationkit/outbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

type bundle struct {
	ctx   context.Context
	db    *bun.DB
	store *insight.Store
}

func setup(t testing.TB) *bundle {
	t.Helper()
	db := financetest.NewDB(t)
	store, err := insight.New(db)
	require.NoError(t, err)
	return &bundle{ctx: context.Background(), db: db, store: store}
}

// exec runs setup SQL that puts rows into the states a test needs.
func (b *bundle) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	_, err := b.db.NewRaw(query, args...).Exec(b.ctx)
	require.NoError(t, err)
}

// event writes an outbox row of invoice key at seq in status, created ago, and its
// requests: one attempt row per outcome, started a second apart after creation.
func (b *bundle) event(t testing.TB, key string, seq int64, status string, ago time.Duration, outcomes ...string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	b.exec(t, `INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
			aggregate_seq, delivery_status, request_count, created_at, delivered_at, last_attempt_at)
		VALUES (?, 'invoice.paid', '{}', ?, 'http://127.0.0.1:9/hook', ?, ?, ?, ?, now() - make_interval(secs => ?),
			CASE WHEN ? = 'delivered' THEN now() - make_interval(secs => ?) + make_interval(secs => ?) END, now())`,
		id, id.String(), key, seq, status, len(outcomes), ago.Seconds(), status, ago.Seconds(), float64(len(outcomes)))
	for i, o := range outcomes {
		b.exec(t, `INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
			VALUES (?, ?, now() - make_interval(secs => ?) + make_interval(secs => ?), 5, ?)`,
			id, i+1, ago.Seconds(), float64(i), o)
	}
	return id
}

// The rollup counts each request once in the minute it started, as delivered, failed
// (the last request of a dead letter) or retried, estimates the written→delivered
// latency, and samples the backlog; rolling up again changes nothing.
func TestRollCountsRequestsAndSamplesTheBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.event(t, "inv-a", 1, "delivered", 3*time.Second, "http_Service Unavailable", "delivered")
	b.event(t, "inv-b", 1, "delivered", 2*time.Second, "delivered")
	b.event(t, "inv-c", 1, "failed", 2*time.Second, "http_Service Unavailable", "rejected_by_receiver")
	b.event(t, "inv-d", 1, "pending", 2*time.Second, "timeout")
	b.event(t, "inv-e", 1, "pending", 10*time.Minute)
	b.event(t, "inv-f", 1, "delivered", 3*time.Hour, "delivered") // outside the last hour

	for range 2 {
		require.NoError(t, b.store.Roll(b.ctx))
	}
	c, err := b.store.Charts(b.ctx, insight.Hour)
	require.NoError(t, err)
	require.Len(t, c.Points, 60)
	var delivered, failed, retried float64
	for _, p := range c.Points {
		delivered, failed, retried = delivered+p.Delivered, failed+p.Failed, retried+p.Retried
	}
	require.Equal(t, []float64{2, 1, 3}, []float64{delivered, failed, retried})
	now := c.Points[len(c.Points)-1]
	require.True(t, now.Sampled)
	require.EqualValues(t, 2, now.Pending)
	require.InDelta(t, 10*time.Minute, now.OldestPending, float64(5*time.Second))
	require.False(t, c.Points[0].Sampled, "no replica sampled an hour ago")

	day, err := b.store.Charts(b.ctx, insight.Day)
	require.NoError(t, err)
	require.Len(t, day.Points, 96)
	var latency []insight.Point
	for _, p := range append(c.Points, day.Points...) {
		if p.Latency {
			latency = append(latency, p)
		}
	}
	require.NotEmpty(t, latency)
	for _, p := range latency {
		require.Greater(t, p.P95, 500*time.Millisecond, "every event took a second or two")
		require.Less(t, p.P50, 3*time.Second)
		require.GreaterOrEqual(t, p.P95, p.P50)
	}
}

// A pending event behind a failed one of its invoice names it; an event before the
// failed one, or of another invoice, is not blocked. Invoice numbers come by id.
func TestBlockersAndInvoiceNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := uuid.New()
	b.exec(t, `INSERT INTO invoices (id, number, customer_id, currency, total_minor, status)
		VALUES (?, 'INV-000042', 'c', 'EUR', 100, 'issued')`, inv)
	key := inv.String()
	b.event(t, key, 1, "delivered", time.Minute, "delivered")
	head := b.event(t, key, 2, "failed", time.Minute, "rejected_by_receiver")
	b.event(t, key, 3, "failed", time.Minute, "rejected_by_receiver")
	b.event(t, key, 4, "pending", time.Minute)
	b.event(t, "other", 1, "pending", time.Minute)

	bl, err := b.store.Blockers(b.ctx, []string{key, "other", "none"})
	require.NoError(t, err)
	got, ok := bl.Of(key, 4)
	require.True(t, ok)
	require.Equal(t, head, got.ID)
	require.EqualValues(t, 2, got.Sequence)
	_, ok = bl.Of(key, 2)
	require.False(t, ok, "the head itself is not blocked")
	_, ok = bl.Of("other", 1)
	require.False(t, ok)

	numbers, err := b.store.InvoiceNumbers(b.ctx, []string{key, "other", uuid.NewString()})
	require.NoError(t, err)
	require.Equal(t, map[string]string{key: "INV-000042"}, numbers)

	rows, err := b.store.Rows(b.ctx, []outbox.StoredEvent{
		{AggregateKey: key, Sequence: 4, Status: outbox.StatusPending},
		{AggregateKey: key, Sequence: 3, Status: outbox.StatusFailed},
		{AggregateKey: "other", Sequence: 1, Status: outbox.StatusPending},
	})
	require.NoError(t, err)
	require.Equal(t, "INV-000042", rows[0].Invoice)
	require.NotNil(t, rows[0].WaitingFor)
	require.Equal(t, head, rows[0].WaitingFor.ID)
	require.Nil(t, rows[1].WaitingFor, "a failed event waits for nothing")
	require.Equal(t, "other", rows[2].Invoice, "no invoice: the aggregate key")
	require.Nil(t, rows[2].WaitingFor)
}

// The alerts panel lists the pager's rows, the most recently seen first, with what
// was sent and the latest occurrence's event.
func TestAlertsListThePagersRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO finance_alerts (alert_key, kind, title, unsent_count, total_count, sample, last_seen_at, sent_at)
		VALUES ('dead_letter:x', 'dead_letter', 'events dead-lettered', 0, 7, '{"event_id":"e1","aggregate":"a1"}', now(), now()),
		       ('pending_age', 'pending_age', 'oldest pending event older than 5m', 2, 2, '{}', now() - interval '1 hour', NULL)`)
	alerts, err := b.store.Alerts(b.ctx)
	require.NoError(t, err)
	require.Len(t, alerts, 2)
	require.Equal(t, "dead_letter", alerts[0].Kind)
	require.EqualValues(t, 7, alerts[0].Total)
	require.NotNil(t, alerts[0].SentAt)
	require.Equal(t, "e1", alerts[0].EventID)
	require.Equal(t, "a1", alerts[0].Aggregate)
	require.Nil(t, alerts[1].SentAt)
	require.EqualValues(t, 2, alerts[1].Unsent)
}

// A delivered request counts in the first latency bucket whose bound is not below its
// event's written→delivered latency: at every bound, the latest whole microsecond not
// above it stays in the bound's bucket and the next goes to the next bucket, whatever
// float8's rounding of the logarithm (at 20,971,520 ms it lands above 63); the last
// bucket holds everything longer.
func TestRollBucketsLatencyAtTheBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var latencies []string // milliseconds, exact to the microsecond
	want := make(map[int]int)
	add := func(us int64, bucket int) {
		latencies = append(latencies, fmt.Sprintf("%d.%03d", us/1000, us%1000))
		want[bucket]++
	}
	const last = 71 // the histogram's last bucket
	add(3000, 0)
	for i := range last {
		// The bound in microseconds: a power of two times 10,000 is exact in float64,
		// and no other bound lies within 0.3 µs of a whole microsecond.
		atOrBelow := int64(math.Floor(1e4 * math.Exp2(float64(i)/3)))
		add(atOrBelow, i)
		add(atOrBelow+1, i+1)
	}
	add(999_999_999_000, last)
	var minute time.Time // one minute for every request, whenever the test runs
	require.NoError(t, b.db.NewRaw(`SELECT date_trunc('minute', now()) - interval '10 minutes'`).Scan(b.ctx, &minute))
	b.exec(t, `WITH o AS (
			INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
				aggregate_seq, delivery_status, request_count, created_at, delivered_at, last_attempt_at)
			SELECT id, 'invoice.paid', '{}', id::text, 'http://127.0.0.1:9/hook', id::text, 1, 'delivered', 1,
				?::timestamptz, ?::timestamptz + ms * interval '1 millisecond', now()
			FROM (SELECT gen_random_uuid() AS id, ms FROM unnest(?::numeric[]) AS ms) AS n RETURNING id)
		INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
		SELECT id, 1, ?::timestamptz, 5, 'delivered' FROM o`, minute, minute, pgdialect.Array(latencies), minute)
	require.NoError(t, b.store.Roll(b.ctx))
	var hist []int64
	require.NoError(t, b.db.NewRaw(`SELECT latency FROM finance_outbox_minutes WHERE minute = ?`, minute).
		Scan(b.ctx, pgdialect.Array(&hist)))
	got := make(map[int]int)
	for i, n := range hist {
		if n > 0 {
			got[i] = int(n)
		}
	}
	require.Equal(t, want, got)
}
