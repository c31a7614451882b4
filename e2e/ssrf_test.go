package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/egress/egresstest"
	"handoff/pkg/integrationkit/pgtest"
)

type outboxRow struct {
	EventType, Status, FailedReason, LastError string
	Requests                                   int
}

func outboxRows(t *testing.T, dbURL, invoiceID string) []outboxRow {
	t.Helper()
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT event_type, delivery_status, coalesce(failed_reason, ''),
		coalesce(last_error, ''), request_count FROM finance_outbox WHERE aggregate_key = $1 ORDER BY aggregate_seq`, invoiceID)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		require.NoError(t, rows.Scan(&r.EventType, &r.Status, &r.FailedReason, &r.LastError, &r.Requests))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// With the dev allowlist 127.0.0.1/32, finance never dials another loopback address in
// any disguise, the IPv6 loopback or the metadata endpoint. The invoice's first event
// dead-letters at once with reason blocked_destination: its one attempt is recorded
// (request_count 1, attempt error class blocked_destination) though no connection was
// made; the paid event waits behind its failed head, never tried (request_count 0).
// Listeners on 127.0.0.2 and ::1 see no connection at all.
func TestBlockedDestinationsAreNeverDialed(t *testing.T) {
	t.Parallel()
	v4 := egresstest.Listen(t, "127.0.0.2:0")
	port := v4.Port()
	v6 := egresstest.Listen(t, "[::1]:"+port)
	targets := map[string]string{
		"other loopback": "http://127.0.0.2:" + port,
		"ipv4-mapped":    "http://[::ffff:127.0.0.2]:" + port,
		"decimal":        "http://2130706434:" + port, // getaddrinfo reads it as 127.0.0.2
		"ipv6 loopback":  "http://[::1]:" + port,
		"metadata":       "http://169.254.169.254",
	}
	t.Cleanup(func() { // after every subtest
		require.Zero(t, v4.Accepted(), "nothing reached 127.0.0.2")
		require.Zero(t, v6.Accepted(), "nothing reached ::1")
	})
	for name, base := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := harness.New(t, harness.Options{LogisticsURL: base + "/webhooks/finance"})
			inv := issue(t, env, "cust-ssrf")
			require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-ssrf").Status)
			var rows []outboxRow
			require.Eventually(t, func() bool {
				rows = outboxRows(t, env.FinanceDB, inv.ID)
				return len(rows) == 2 && rows[0].Status == "failed"
			}, 15*time.Second, 20*time.Millisecond)
			head, paid := rows[0], rows[1]
			require.Equal(t, "invoice.issued", head.EventType)
			require.Equal(t, "blocked_destination", head.FailedReason)
			require.Equal(t, 1, head.Requests)
			require.Contains(t, head.LastError, "blocked")
			require.Equal(t, "invoice.paid", paid.EventType)
			require.Equal(t, "pending", paid.Status, "waits behind its dead head")
			require.Zero(t, paid.Requests)
			require.Equal(t, "blocked_destination", query[string](t, env.FinanceDB,
				`SELECT a.error_class FROM finance_outbox_attempts a JOIN finance_outbox o ON o.id = a.outbox_id
				 WHERE o.aggregate_key = $1`, inv.ID))
		})
	}
}
