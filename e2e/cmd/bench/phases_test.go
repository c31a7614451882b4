package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// The split reads each paid event's wait before its request, the request's duration
// and size, and whether its invoice's issued event was delivered after the payment.
func TestSplitOfPaidEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := emptyPool(t, "split")
	_, err := db.Exec(ctx, outbox.Schema("finance_outbox"))
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	event := func(invoice, typ string, seq, created, delivered int) uuid.UUID {
		id := uuid.New()
		_, err := db.Exec(ctx, `INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination,
			aggregate_key, aggregate_seq, delivery_status, created_at, delivered_at)
			VALUES ($1, $2, '{}', $3, 'logistics', $4, $5, 'delivered', $6, $7)`,
			id, typ, id.String(), invoice, seq, at(created), at(delivered))
		require.NoError(t, err)
		return id
	}
	attempt := func(event uuid.UUID, no, started, ms int, outcome string) {
		_, err := db.Exec(ctx, `INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
			VALUES ($1, $2, $3, $4, $5)`, event, no, at(started), ms, outcome)
		require.NoError(t, err)
	}
	// Invoice a is paid while its issued event is in flight; its paid event goes at 60
	// ms in a request of two events, one of them retried.
	a, b, other := uuid.NewString(), uuid.NewString(), uuid.NewString()
	attempt(event(a, "invoice.issued", 1, 0, 50), 1, 5, 40, "delivered")
	attempt(event(a, "invoice.paid", 2, 10, 80), 1, 60, 20, "delivered")
	attempt(event(other, "invoice.issued", 1, 30, 90), 1, 60, 20, "retry")
	// Invoice b is paid after its issued event was delivered; its paid event's first
	// request fails, the second goes alone.
	attempt(event(b, "invoice.issued", 1, 0, 5), 1, 1, 3, "delivered")
	paid := event(b, "invoice.paid", 2, 20, 40)
	attempt(paid, 1, 22, 2, "retry")
	attempt(paid, 2, 30, 7, "delivered")
	// The paid event of an invoice not asked about counts nowhere.
	c := uuid.NewString()
	attempt(event(c, "invoice.issued", 1, 0, 2), 1, 0, 1, "delivered")
	attempt(event(c, "invoice.paid", 2, 0, 900), 1, 800, 90, "delivered")

	s, err := splitOf(ctx, db, []string{a, b})
	require.NoError(t, err)
	require.Equal(t, 2, s.Queued.N)
	require.Equal(t, []float64{10, 50}, []float64{s.Queued.P50, s.Queued.Max}, "waits: 30-20 and 60-10 ms")
	require.Equal(t, []float64{7, 20}, []float64{s.Request.P50, s.Request.Max})
	require.InDelta(t, 1.5, s.PerRequest, 1e-9, "a request of two and one of one")
	require.InDelta(t, 0.5, s.BehindIssued, 1e-9, "a's issued event was delivered after its payment")
}

// emptyPool is a pool of one connection to a fresh, empty database, closed when the
// test ends.
func emptyPool(t *testing.T, name string) *pgxpool.Pool {
	t.Helper()
	db, err := openPool(context.Background(), pgtest.NewEmptyURL(t, name), 1)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}
