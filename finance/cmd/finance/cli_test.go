package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/migrations"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command/commandtest"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// commands lists every command of finance, as Parse finds them.
func commands() []cli.Command {
	return env{}.binary().Program().Commands
}

// flagsOf returns the names of a command's flags.
func flagsOf(c cli.Command) []string {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	if c.Setup != nil {
		c.Setup(fs)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// exitOf runs finance with args and no environment, and returns stdout, stderr and
// the exit status main would exit with.
func exitOf(t *testing.T, environ []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, environ, &out, &errOut)
	code = cli.Status("finance", err, &errOut)
	return out.String(), errOut.String(), code
}

// finance's standard commands (help, help --json, version, healthcheck) keep the
// kit's promises with finance's declarations, and README.md lists every variable.
func TestStandardCommands(t *testing.T) {
	t.Parallel()
	commandtest.Suite(t, commandtest.Binary{Name: "finance", Run: run, Settings: (&config{}).settings(),
		README: "../../../README.md"})
}

// Every command answers --help, and help <command>, with its own usage on stdout and
// exit 0, and a flag it does not know with that usage on stderr and exit 2; neither
// needs the environment.
func TestEveryCommandAnswersHelpAndMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		words := strings.Fields(c.Name)
		head := "Usage: finance " + c.Name
		stdout, stderr, code := exitOf(t, nil, append(words, "--help")...)
		require.Equal(t, 0, code, "%s: %s", c.Name, stderr)
		require.True(t, strings.HasPrefix(stdout, head), "%s: %s", c.Name, stdout)
		for _, f := range flagsOf(c) {
			require.Contains(t, stdout, "  --"+f, "%s --help names --%s", c.Name, f)
		}
		again, _, code := exitOf(t, nil, append([]string{"help"}, words...)...)
		require.Equal(t, 0, code)
		require.Equal(t, stdout, again, "help %s", c.Name)

		stdout, stderr, code = exitOf(t, nil, append(words, "--no-such-flag")...)
		require.Equal(t, 2, code, c.Name)
		require.Empty(t, stdout, c.Name)
		require.Equal(t, "finance: "+c.Name+": flag provided but not defined: --no-such-flag\n\n"+again, stderr)
	}
	for _, args := range [][]string{nil, {"fly"}, {"migrate"}, {"migrate", "sideways"}, {"serve", "now"}, {"version", "1"}} {
		stdout, stderr, code := exitOf(t, nil, args...)
		require.Equal(t, 2, code, "%v", args)
		require.Empty(t, stdout, "%v", args)
		require.Contains(t, stderr, "\n\nUsage:", "%v", args)
	}
}

// finance --help, the usage const, names every command and every flag each takes.
func TestTopLevelUsageNamesEveryCommandAndFlag(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		words := strings.Fields(c.Name)
		// "migrate up" is written "finance migrate up|down|version".
		pattern := `(?m)^  finance ` + words[0]
		if len(words) > 1 {
			pattern += ` (\S+\|)*` + regexp.QuoteMeta(words[1]) + `\b`
		}
		re := regexp.MustCompile(pattern)
		require.Regexp(t, re, usage, c.Name)
		// The command's entry runs to the next line that starts another command.
		entries := re.FindAllStringIndex(usage, -1)
		var text string
		for _, at := range entries {
			end := strings.Index(usage[at[1]:], "\n  finance ")
			if end < 0 {
				end = len(usage) - at[1]
			}
			text += usage[at[0] : at[1]+end]
		}
		for _, f := range flagsOf(c) {
			require.Contains(t, text, "--"+f, "finance --help shows --%s of %s", f, c.Name)
		}
	}
}

// outbox list, stats, show, trace and audit --json print one document each, with
// the fields a script reads.
func TestOutboxJSON(t *testing.T) {
	t.Parallel()
	c, inv, failed := setupCLI(t)
	c.must(t, "retry", failed.String(), "--reason=mapping fixed")
	_, err := c.db.NewRaw(`UPDATE finance_outbox SET delivery_status = 'failed', failed_reason = 'rejected: HTTP 400'
		WHERE id = ?`, failed).Exec(c.ctx)
	require.NoError(t, err)

	var list struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	c.mustJSON(t, &list, "list", "--invoice="+inv.Number)
	require.Len(t, list.Items, 2)
	require.Nil(t, list.NextCursor)
	require.ElementsMatch(t, []string{"id", "type", "idempotency_key", "invoice_id", "invoice_number", "sequence",
		"destination", "correlation_id", "status", "attempts", "requests", "in_flight", "lease_owner",
		"lease_expires_at", "last_error", "last_status_code", "failed_reason", "created_at", "last_attempt_at",
		"next_attempt_at", "delivered_at", "skipped_at", "deferred_at", "deferred_by", "waiting_for"},
		slices.Collect(maps.Keys(list.Items[0])))
	paid, head := list.Items[0], list.Items[1]
	require.Equal(t, "invoice.paid", paid["type"])
	require.Equal(t, "pending", paid["status"])
	require.Equal(t, inv.Number, paid["invoice_number"])
	require.Equal(t, inv.ID.String(), paid["invoice_id"])
	require.Equal(t, map[string]any{"id": failed.String(), "type": "invoice.issued", "sequence": float64(1),
		"status": "failed"}, paid["waiting_for"])
	require.Equal(t, failed.String(), head["id"])
	require.Nil(t, head["waiting_for"])
	require.Nil(t, head["delivered_at"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`, head["created_at"], "RFC 3339 in UTC")

	c.mustJSON(t, &list, "list", "--limit=1")
	require.NotNil(t, list.NextCursor)

	var stats struct {
		Counts                  map[string]int64 `json:"counts"`
		DueNow                  int64            `json:"due_now"`
		InFlight                int64            `json:"in_flight"`
		OldestPendingAgeSeconds float64          `json:"oldest_pending_age_seconds"`
		AsOf                    string           `json:"as_of"`
		Circuits                []map[string]any `json:"circuits"`
		Reconciliation          map[string]any   `json:"reconciliation"`
		ReconciliationNote      string           `json:"reconciliation_note"`
	}
	c.mustJSON(t, &stats, "stats")
	require.Equal(t, map[string]int64{"pending": 3, "failed": 1, "delivered": 0, "skipped": 0}, stats.Counts)
	require.EqualValues(t, 3, stats.DueNow)
	require.Zero(t, stats.InFlight)
	require.Greater(t, stats.OldestPendingAgeSeconds, 0.0)
	require.NotEmpty(t, stats.AsOf)
	require.Empty(t, stats.Circuits)
	require.Nil(t, stats.Reconciliation)
	require.Equal(t, "no reconciliation has run yet", stats.ReconciliationNote)

	var show map[string]any
	c.mustJSON(t, &show, "show", failed.String())
	require.Equal(t, "rejected: HTTP 400", show["failed_reason"])
	require.Len(t, show["attempt_log"], 1)
	payload, err := json.Marshal(show["payload"])
	require.NoError(t, err)
	require.Contains(t, string(payload), `"invoice_number":"`+inv.Number+`"`, "the payload as a JSON value")

	var trace struct {
		Invoice   map[string]any   `json:"invoice"`
		Events    []map[string]any `json:"events"`
		Logistics struct {
			Available bool             `json:"available"`
			Note      string           `json:"note"`
			Processed []map[string]any `json:"processed"`
			Shipment  map[string]any   `json:"shipment"`
		} `json:"logistics"`
	}
	c.mustJSON(t, &trace, "trace", inv.Number)
	require.Equal(t, inv.Number, trace.Invoice["number"])
	require.Len(t, trace.Events, 2)
	require.NotNil(t, trace.Events[1]["waiting_for"])
	require.False(t, trace.Logistics.Available)
	require.Contains(t, trace.Logistics.Note, "logistics record unavailable")

	var audit struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	c.mustJSON(t, &audit, "audit")
	require.Len(t, audit.Items, 1)
	require.Equal(t, "retry", audit.Items[0]["action"])
	require.Equal(t, "mapping fixed", audit.Items[0]["reason"])
	require.Equal(t, failed.String(), audit.Items[0]["event_id"])
	require.NotContains(t, audit.Items[0], "filter", "a retry of one event has no filter")
	require.NotContains(t, audit.Items[0], "destination")
}

// A retry by filter is one statement: it says on stderr what it is doing before, and
// prints the result after on stdout.
func TestRetryByFilterSaysWhatItDoes(t *testing.T) {
	t.Parallel()
	c, inv, _ := setupCLI(t)
	stdout, stderr, code := c.runAll(t, "retry", "--status=failed", "--invoice="+inv.Number, "--reason=fixed")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(stderr, "outbox: replaying the events matching --status=failed --invoice="+
		inv.ID.String()+" (at most 1000), in one statement\n"), stderr)
	require.Equal(t, "replayed 1 events: pending, due now, budget reset\n", stdout)
	_, stderr, code = c.runAll(t, "skip", "--status=failed", "--reason=x", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "outbox: counting what skip would change of the events matching --status=failed (at most 1000), "+
		"in one statement\n", stderr)
}

// logisticsStandIn answers logistics' ops API with the processed keys it holds; with
// none given, it answers 503.
func logisticsStandIn(t *testing.T, keys ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keys == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		items := []map[string]any{}
		for _, k := range keys {
			items = append(items, map[string]any{"idempotency_key": k, "event_id": uuid.NewString(),
				"event_type": "invoice.paid", "result": "applied", "received_at": "2000-01-01T00:00:00Z"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "next_cursor": ""})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// finance reconcile exits 0 on a clean window, 1 when it found discrepancies, and 2
// when it could not reconcile: a bad flag, no ops token, the database or logistics
// unreachable. --json prints the report as one document either way it finished.
func TestReconcileExitStatus(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t, "finance", migrations.Finance())
	environ := func(db, logistics string) []string {
		return []string{"DATABASE_URL=" + db, "LOGISTICS_API_URL=" + logistics,
			"LOGISTICS_OPS_TOKEN=ops-token-0123456789abc", "OUTBOUND_ALLOW=127.0.0.1/32"}
	}
	answering := logisticsStandIn(t, "k-other")

	stdout, stderr, code := exitOf(t, environ(url, answering), "reconcile", "--since=1h")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "\nclean: nothing to look at\n")
	require.Regexp(t, `^reconcile: comparing \S+ – \S+ with logistics at http://127\.0\.0\.1:\d+\n`+
		`reconcile: 1 processed events read from logistics so far\n`+
		`reconcile: stored as report \d+\n$`, stderr)

	var report map[string]any
	stdout, stderr, code = exitOf(t, environ(url, answering), "reconcile", "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	require.ElementsMatch(t, []string{"id", "started_at", "finished_at", "from", "to", "delivered", "processed",
		"skipped", "discrepancies", "missing", "unknown", "overdue", "clean"}, slices.Collect(maps.Keys(report)))
	require.Equal(t, true, report["clean"])

	db, err := pgdb.Open(context.Background(), url, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.NewRaw(`INSERT INTO finance_outbox (id, event_type, payload, idempotency_key, destination,
			aggregate_key, aggregate_seq, delivery_status, delivered_at)
		VALUES (gen_random_uuid(), 'invoice.paid', '{}', 'k-lost', 'http://l', 'inv-1', 1, 'delivered', now())`).
		Exec(context.Background())
	require.NoError(t, err)
	stdout, stderr, code = exitOf(t, environ(url, answering), "reconcile", "--json")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "finance: reconciliation found discrepancies: 1\n")
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	require.Equal(t, false, report["clean"])
	require.Equal(t, map[string]any{"missing": float64(1), "unknown": float64(0), "overdue": float64(0)}, report["discrepancies"])
	require.Equal(t, "k-lost", report["missing"].([]any)[0].(map[string]any)["idempotency_key"])
	stdout, _, code = exitOf(t, environ(url, answering), "reconcile")
	require.Equal(t, 1, code)
	require.Regexp(t, `(?m)^delivered but never applied\s+1$`, stdout)
	require.Contains(t, stdout, "\n1 discrepancies: see docs/operations.md")

	for name, tc := range map[string]struct {
		environ []string
		args    []string
		stderr  string
	}{
		"bad flag":              {environ(url, answering), []string{"--since=yesterday"}, "Usage: finance reconcile [flags]"},
		"extra argument":        {environ(url, answering), []string{"now"}, "Usage: finance reconcile [flags]"},
		"future --since":        {environ(url, answering), []string{"--since=2999-01-01T00:00:00Z"}, "want a past time"},
		"no ops token":          {[]string{"DATABASE_URL=" + url}, nil, "LOGISTICS_OPS_TOKEN: required by reconcile"},
		"database unreachable":  {environ("postgres://postgres@127.0.0.1:1/finance?sslmode=disable", answering), nil, "finance: "},
		"logistics unreachable": {environ(url, logisticsStandIn(t)), nil, "could not reconcile: "},
	} {
		stdout, stderr, code := exitOf(t, tc.environ, append([]string{"reconcile"}, tc.args...)...)
		require.Equal(t, 2, code, "%s: %s", name, stderr)
		require.Empty(t, stdout, name)
		require.Contains(t, stderr, tc.stderr, name)
	}
}
