package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// cliDB is a finance database for the outbox commands.
type cliDB struct {
	ctx context.Context
	db  *bun.DB
	env []string
}

// setupCLI gives the outbox commands a fresh finance database holding two paid
// invoices, the first one's invoice.issued event dead-lettered.
func setupCLI(t *testing.T) (*cliDB, invoice.Invoice, uuid.UUID) {
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
	return &cliDB{ctx: ctx, db: db, env: []string{"DATABASE_URL=" + url}}, first, failed
}

func (c *cliDB) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(c.ctx, append([]string{"outbox"}, args...), c.env, &out, io.Discard)
	return out.String(), err
}

// runEnv runs an outbox command with extra variables on top of the database's.
func (c *cliDB) runEnv(t *testing.T, extra map[string]string, args ...string) (string, error) {
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

func (c *cliDB) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.run(t, args...)
	require.NoError(t, err, out)
	return out
}

// runAll runs an outbox command and returns its stdout, its stderr and the exit status
// main would exit with (after writing the error to stderr).
func (c *cliDB) runAll(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(c.ctx, append([]string{"outbox"}, args...), c.env, &out, &errOut)
	code = cli.Status("finance", err, &errOut)
	return out.String(), errOut.String(), code
}

// mustJSON runs an outbox command with --json and decodes its one document into v.
func (c *cliDB) mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := c.must(t, append(args, "--json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), out)
	require.False(t, dec.More(), "one document")
}

func TestOutboxListAndShow(t *testing.T) {
	t.Parallel()
	c, inv, failed := setupCLI(t)

	out := c.must(t, "list", "--status=failed")
	require.Contains(t, out, "LAST ERROR")
	require.Contains(t, out, " "+inv.Number+" ", "the invoice by its number")
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
	for _, want := range []string{"invoice.issued", inv.Number + " (" + inv.ID.String() + "), event 1 of the invoice",
		"8 counted against the budget, 8 requests sent in all", "rejected: HTTP 400",
		"dead_letter", `"invoice_number": "` + inv.Number + `"`} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "waiting for", "the failed event waits for nothing")

	out = c.must(t, "stats")
	require.Regexp(t, `(?m)^failed\s+1\s+\(dead letters: retry or skip them\)$`, out)
	require.Regexp(t, `(?m)^pending\s+3\s+\(due now 3, in flight 0, oldest \d+s ago\)$`, out)
	require.Regexp(t, `(?m)^reconciliation\s+no reconciliation has run yet$`, out)

	out = c.must(t, "trace", inv.Number)
	require.Contains(t, out, "invoice "+inv.Number)
	require.Contains(t, out, "1. invoice.issued  failed")
	require.Contains(t, out, "2. invoice.paid  pending, waiting for invoice.issued #1 (failed)")
	require.Contains(t, out, "logistics record unavailable")
}

// A pending event behind a failed one of its invoice says which, in list and show.
func TestOutboxSaysWhatAPendingEventWaitsFor(t *testing.T) {
	t.Parallel()
	c, inv, failed := setupCLI(t)
	var paid string
	require.NoError(t, c.db.NewRaw(`SELECT id FROM finance_outbox WHERE aggregate_key = ? AND aggregate_seq = 2`,
		inv.ID.String()).Scan(c.ctx, &paid))

	out := c.must(t, "list", "--invoice="+inv.Number)
	require.Regexp(t, `(?m)^`+paid+`\s.*\sinvoice\.paid\s+`+inv.Number+`\s+2\s+pending, waiting for invoice\.issued #1 \(failed\)\s`, out)
	require.Regexp(t, `(?m)^`+failed.String()+`\s.*\s1\s+failed\s+8/8\s`, out)

	out = c.must(t, "show", paid)
	require.Regexp(t, `(?m)^waiting for\s+`+failed.String()+` \(invoice\.issued, event 1 of the invoice\) \(failed\): `, out)

	c.must(t, "skip", failed.String(), "--reason=gave up")
	require.NotContains(t, c.must(t, "show", paid), "waiting for", "a skipped head holds nothing back")
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

// Every mistake on an outbox command line, caught by the flags or refused by what
// they name, exits 2 with the usage of that command on stderr and nothing on stdout;
// a refusal of the world (not found) exits 1 without usage.
func TestOutboxMistakesExit2WithTheirUsage(t *testing.T) {
	t.Parallel()
	c, _, _ := setupCLI(t)
	cases := []struct {
		args  []string
		usage string
	}{
		{[]string{}, "Usage: finance outbox <command>"},
		{[]string{"explode"}, "Usage: finance outbox <command>"},
		{[]string{"list", "extra"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--nope"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--status=lost"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--from=yesterday"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--limit=many"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--limit=501"}, "Usage: finance outbox list [flags]"},
		{[]string{"list", "--cursor=zzz"}, "Usage: finance outbox list [flags]"},
		{[]string{"stats", "--json=maybe"}, "Usage: finance outbox stats [flags]"},
		{[]string{"show"}, "Usage: finance outbox show <event-id>"},
		{[]string{"show", "42"}, "Usage: finance outbox show <event-id>"},
		{[]string{"trace"}, "Usage: finance outbox trace <invoice>"},
		{[]string{"retry"}, "Usage: finance outbox retry [<event-id>]"},
		{[]string{"retry", "not-a-uuid"}, "Usage: finance outbox retry [<event-id>]"},
		{[]string{"retry", "--type=invoice.paid"}, "Usage: finance outbox retry [<event-id>]"},
		{[]string{"retry", "--status=delivered", "--reason=x"}, "Usage: finance outbox retry [<event-id>]"},
		{[]string{"retry", uuid.NewString()}, "Usage: finance outbox retry [<event-id>]"},
		{[]string{"skip", "--reason=x"}, "Usage: finance outbox skip [<event-id>]"},
		{[]string{"skip", uuid.NewString(), "--status=failed", "--reason=x"}, "Usage: finance outbox skip [<event-id>]"},
		{[]string{"resend"}, "Usage: finance outbox resend <event-id>"},
		{[]string{"resend", "a", "b"}, "Usage: finance outbox resend <event-id>"},
		{[]string{"retarget", "--reason=x"}, "Usage: finance outbox retarget [flags]"},
		{[]string{"pause", "extra"}, "Usage: finance outbox pause [flags]"},
		{[]string{"pause", "--reason= "}, "Usage: finance outbox pause [flags]"},
		{[]string{"resume", "--nope"}, "Usage: finance outbox resume [flags]"},
		{[]string{"audit", "extra"}, "Usage: finance outbox audit [flags]"},
		{[]string{"audit", "--limit=501"}, "Usage: finance outbox audit [flags]"},
		{[]string{"audit", "--cursor=zzz"}, "Usage: finance outbox audit [flags]"},
		{[]string{"audit", "--event=zzz"}, "Usage: finance outbox audit [flags]"},
	}
	for _, tc := range cases {
		stdout, stderr, code := c.runAll(t, tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		require.Empty(t, stdout, "%v", tc.args)
		require.Regexp(t, `(?m)^finance: `, stderr, "%v", tc.args)
		require.Contains(t, stderr, "\n\n"+tc.usage, "%v", tc.args)
	}
	for _, args := range [][]string{{"show", uuid.NewString()}, {"trace", "INV-424242"},
		{"skip", uuid.NewString(), "--reason=x"}, {"list", "--invoice=INV-424242"}} {
		_, stderr, code := c.runAll(t, args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.NotContains(t, stderr, "Usage:", "%v", args)
		require.Contains(t, stderr, "not found", "%v", args)
	}
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
		": all due now with a fresh budget, dead letters included\n", out)

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
