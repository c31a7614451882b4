package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

type cli struct {
	ctx context.Context
	db  *bun.DB
	env []string
}

// setupCLI gives the outbox commands a fresh finance database holding two paid
// invoices, the first one's invoice.issued event dead-lettered.
func setupCLI(t *testing.T) (*cli, invoice.Invoice, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewURL(t, "finance", migrations.Finance())
	db, err := pgdb.Open(ctx, url, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	svc, err := invoice.NewService(db, invoice.Config{Destination: "http://127.0.0.1:8082/webhooks/finance"})
	require.NoError(t, err)
	var first invoice.Invoice
	for i := range 2 {
		total := int64(900)
		inv, err := svc.Issue(ctx, invoice.NewInvoice{CustomerID: "cust-cli", Currency: "SEK", TotalMinor: &total})
		require.NoError(t, err)
		_, err = svc.Pay(ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-" + inv.ID.String(), AmountMinor: total})
		require.NoError(t, err)
		if i == 0 {
			first = inv
		}
	}
	var failed uuid.UUID
	err = db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'failed', delivery_attempts = 8, request_count = 8,
		last_error = ?, last_status_code = 400, failed_reason = 'rejected: HTTP 400'
		WHERE aggregate_key = ? AND aggregate_seq = 1 RETURNING id`, "bad\x1b[31m event", first.ID.String()).Scan(ctx, &failed)
	require.NoError(t, err)
	_, err = db.NewRaw(`INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, status_code, outcome)
		VALUES (?, 8, now(), 12, 400, 'dead_letter')`, failed).Exec(ctx)
	require.NoError(t, err)
	return &cli{ctx: ctx, db: db, env: []string{"DATABASE_URL=" + url}}, first, failed
}

func (c *cli) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(c.ctx, append([]string{"outbox"}, args...), c.env, &out, io.Discard)
	return out.String(), err
}

// runEnv runs an outbox command with extra variables on top of the database's.
func (c *cli) runEnv(t *testing.T, extra map[string]string, args ...string) (string, error) {
	t.Helper()
	var env []string
	for k, v := range extra {
		env = append(env, k+"="+v) // the first entry of a name wins
	}
	env = append(env, c.env...)
	var out bytes.Buffer
	err := run(c.ctx, append([]string{"outbox"}, args...), env, &out, io.Discard)
	return out.String(), err
}

func (c *cli) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.run(t, args...)
	require.NoError(t, err, out)
	return out
}

func TestOutboxListAndShow(t *testing.T) {
	t.Parallel()
	c, inv, failed := setupCLI(t)

	out := c.must(t, "list", "--status=failed")
	require.Contains(t, out, "LAST ERROR")
	require.Contains(t, out, failed.String())
	require.Contains(t, out, "8/8")
	require.NotContains(t, out, "\x1b", "no terminal escapes from a receiver reach the screen")
	require.Equal(t, 2, strings.Count(out, "\n"), "a header and one event")

	out = c.must(t, "list", "--invoice="+inv.Number)
	require.Equal(t, 3, strings.Count(out, "\n"))
	out = c.must(t, "list", "--limit=3")
	require.Contains(t, out, "more: add --cursor=")
	cursor := out[strings.Index(out, "--cursor=")+len("--cursor=") : len(out)-1]
	out = c.must(t, "list", "--limit=3", "--cursor="+cursor)
	require.Equal(t, 2, strings.Count(out, "\n"), "the fourth event")

	out = c.must(t, "show", failed.String())
	for _, want := range []string{"invoice.issued", inv.ID.String(), "8 counted, 8 requests sent", "rejected: HTTP 400",
		"dead_letter", `"invoice_number": "` + inv.Number + `"`} {
		require.Contains(t, out, want)
	}

	out = c.must(t, "stats")
	require.Regexp(t, `(?m)^failed\s+1$`, out)
	require.Regexp(t, `(?m)^pending\s+3$`, out)

	out = c.must(t, "trace", inv.Number)
	require.Contains(t, out, "invoice "+inv.Number)
	require.Contains(t, out, "1. invoice.issued  failed")
	require.Contains(t, out, "logistics record unavailable")
}

func TestOutboxRetry(t *testing.T) {
	t.Parallel()
	c, _, failed := setupCLI(t)

	_, err := c.run(t, "retry", failed.String())
	require.ErrorContains(t, err, "invalid reason")
	out := c.must(t, "retry", failed.String(), "--reason=the mapping is fixed")
	require.Contains(t, out, "replayed "+failed.String())
	require.Contains(t, out, "8 requests so far")
	var status string
	var attempts int
	require.NoError(t, c.db.NewRaw(`SELECT delivery_status, delivery_attempts FROM finance_outbox WHERE id = ?`, failed).
		Scan(c.ctx, &status, &attempts))
	require.Equal(t, "pending", status)
	require.Zero(t, attempts)

	_, err = c.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'failed' WHERE event_type = 'invoice.paid'`).Exec(c.ctx)
	require.NoError(t, err)
	out = c.must(t, "retry", "--status=failed", "--reason=outage over", "--dry-run")
	require.Equal(t, "dry run: would replay 2 events; nothing changed\n", out)
	out = c.must(t, "retry", "--status=failed", "--type=invoice.paid", "--limit=1", "--reason=outage over")
	require.Equal(t, "replayed 1 events: pending, due now, budget reset\nmore events match (limit 1): run the command again\n", out)
	out = c.must(t, "retry", "--reason=outage over", "--status=failed")
	require.Equal(t, "replayed 1 events: pending, due now, budget reset\n", out)

	_, err = c.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'delivered', delivered_at = now() WHERE id = ?`, failed).Exec(c.ctx)
	require.NoError(t, err)
	_, err = c.run(t, "retry", failed.String(), "--reason=again")
	require.ErrorContains(t, err, "already delivered")
}

func TestOutboxUsage(t *testing.T) {
	t.Parallel()
	c, _, _ := setupCLI(t)
	for _, args := range [][]string{{}, {"explode"}, {"list", "extra"}, {"list", "--nope"}, {"show"},
		{"retry"}, {"retry", "--type=invoice.paid"}, {"trace"}, {"skip", "--reason=x"},
		{"skip", uuid.NewString(), "--status=failed", "--reason=x"}, {"resend"}, {"resend", "a", "b"},
		{"retarget", "--reason=x"}, {"pause", "extra"}, {"resume", "--nope"}, {"audit", "extra"}} {
		_, err := c.run(t, args...)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}
	for _, args := range [][]string{{"show", "42"}, {"retry", "not-a-uuid"}, {"list", "--status=lost"},
		{"list", "--from=yesterday"}, {"retry", "--status=delivered", "--reason=x"}, {"trace", "INV-424242"},
		{"skip", uuid.NewString()}, {"pause", "--reason= "}, {"audit", "--limit=501"}, {"audit", "--cursor=zzz"}} {
		_, err := c.run(t, args...)
		require.Error(t, err, "%v", args)
		require.NotErrorIs(t, err, errUsage, "%v", args)
	}
	_, err := c.run(t, "show", uuid.NewString())
	require.ErrorContains(t, err, "not found")
}

// Skip, resend, retarget, pause and resume from the command line, each recorded with
// the OS user and shown by show, trace and audit.
func TestOutboxActionsAreAudited(t *testing.T) {
	t.Parallel()
	c, inv, failed := setupCLI(t)
	const current = "http://127.0.0.1:8092/webhooks/finance"

	out := c.must(t, "skip", "--status=failed", "--reason=bad upstream data", "--dry-run")
	require.Equal(t, "dry run: would skip 1 events; nothing changed\n", out)
	out = c.must(t, "skip", failed.String(), "--reason=bad upstream data")
	require.Contains(t, out, "skipped "+failed.String())
	out = c.must(t, "show", failed.String())
	require.Regexp(t, `(?m)^skipped\s+\d{4}-`, out)
	require.Regexp(t, `(?m)^  \d{4}-\S+ \S+\s+cli:\S*\s+skip\s+1\s+bad upstream data$`, out)
	out = c.must(t, "trace", inv.Number)
	require.Contains(t, out, "1. invoice.issued  skipped")
	require.Contains(t, out, "operator actions:")
	require.Contains(t, out, "bad upstream data")

	var delivered string
	require.NoError(t, c.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'delivered', delivered_at = now()
		WHERE aggregate_key = ? AND aggregate_seq = 2 RETURNING id`, inv.ID.String()).Scan(c.ctx, &delivered))
	out = c.must(t, "resend", "--reason=logistics lost it", delivered)
	require.Contains(t, out, "resent "+delivered+" (invoice.paid of invoice "+inv.ID.String()+") under key invoice.paid:")

	out, err := c.runEnv(t, map[string]string{"LOGISTICS_WEBHOOK_URL": current},
		"retarget", "--from=http://127.0.0.1:8082/webhooks/finance", "--reason=logistics moved")
	require.NoError(t, err, out)
	require.Equal(t, "moved 3 undelivered events from http://127.0.0.1:8082/webhooks/finance to "+current+
		": pending ones are due now, dead letters wait for a retry\n", out)

	out = c.must(t, "pause", "--reason=logistics maintenance")
	require.Equal(t, "paused http://127.0.0.1:8082/webhooks/finance: no replica sends to it until `finance outbox resume`\n", out)
	_, err = c.run(t, "pause", "--reason=again")
	require.ErrorContains(t, err, "paused already")
	require.Regexp(t, `(?m)^circuit\s+http://127.0.0.1:8082/webhooks/finance\s+closed.*PAUSED since`, c.must(t, "stats"))
	out = c.must(t, "resume", "--destination=http://127.0.0.1:8082/webhooks/finance", "--reason=maintenance over")
	require.Equal(t, "resumed http://127.0.0.1:8082/webhooks/finance: 0 deferred events due now\n", out)

	out = c.must(t, "audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	for i, action := range []string{"resume", "pause", "retarget", "resend", "skip"} {
		require.Regexp(t, `\scli:\S*\s+`+action+`\s`, lines[i+1])
	}
	require.Contains(t, lines[3], "destination=http://127.0.0.1:8082/webhooks/finance → "+current)
	out = c.must(t, "audit", "--event="+failed.String())
	require.Equal(t, 2, strings.Count(out, "\n"), out)
	out = c.must(t, "audit", "--invoice="+inv.Number, "--limit=2")
	require.Contains(t, out, "more: add --cursor=")
	cursor := out[strings.Index(out, "--cursor=")+len("--cursor=") : len(out)-1]
	out = c.must(t, "audit", "--invoice="+inv.Number, "--limit=2", "--cursor="+cursor)
	require.Contains(t, out, "skip")
}
