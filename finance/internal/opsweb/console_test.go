package opsweb_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/ops"
)

type failedReconciliation struct{}

func (failedReconciliation) Latest(context.Context) (ops.Reconciliation, bool, error) {
	return ops.Reconciliation{FinishedAt: time.Now(), From: time.Now().Add(-time.Hour), To: time.Now(),
		Error: "logistics ops API: 401 Unauthorized"}, true, nil
}

// The overview draws the four charts for the last hour or day as inline SVG, lists
// the pager's alerts, says plainly that a reconciliation could not run, and refreshes
// itself only when asked.
func TestOverviewShowsTrendsAlertsAndHonestFailures(t *testing.T) {
	t.Parallel()
	b := setupWith(t, options{reconciliations: failedReconciliation{}})
	inv, id := b.failed(t, "HTTP 400")
	_, err := b.DB.NewRaw(`INSERT INTO finance_outbox_attempts (outbox_id, attempt_no, started_at, duration_ms, outcome)
		VALUES (?, 1, now(), 5, 'rejected_by_receiver')`, id).Exec(b.Ctx)
	require.NoError(t, err)
	_, err = b.DB.NewRaw(`INSERT INTO finance_alerts (alert_key, kind, title, unsent_count, total_count, sample, sent_at)
		VALUES ('dead_letter:x', 'dead_letter', 'events dead-lettered', 0, 3, ?::jsonb, now())`,
		`{"event_id":"`+id.String()+`","aggregate":"`+inv.ID.String()+`"}`).Exec(b.Ctx)
	require.NoError(t, err)
	b.login(t)

	// No rollup ran yet: the overview rolls up before it draws, so the minute just
	// logged is on the chart without waiting for the 15 s tick.
	p := b.get(t, "/ops/")
	require.Equal(t, http.StatusOK, p.status, p.body)
	for _, chart := range []string{"chart-throughput", "chart-backlog", "chart-oldest", "chart-latency"} {
		require.Contains(t, p.body, `id="`+chart+`"`)
	}
	require.Equal(t, 4, strings.Count(p.body, "<svg "))
	require.Contains(t, p.body, `class="line line-failed"`)
	require.Contains(t, p.body, `class="threshold"`, "the oldest-pending chart draws ALERT_PENDING_AGE")
	require.Contains(t, p.body, "Latest minute: 0 delivered, 0 retried, 1 failed per minute.")
	require.Contains(t, p.body, `aria-current="page">last 1 h<`)
	require.Equal(t, 60, strings.Count(regexp.MustCompile(`(?s)id="chart-throughput".*?</figure>`).FindString(p.body), `class="hit"`))

	require.Contains(t, p.body, `id="alert-dead_letter:x"`)
	require.Contains(t, p.body, "events dead-lettered")
	require.Contains(t, p.body, `href="/ops/events/`+id.String()+`">event</a>`)
	require.Contains(t, p.body, ">"+inv.Number+"</a>", "the alert's invoice by its number")

	require.Contains(t, p.body, "Reconciliation could not run: logistics ops API: 401 Unauthorized")
	require.NotContains(t, p.body, "never applied ·", "no count badge for a run that compared nothing")

	require.NotContains(t, p.body, `http-equiv="refresh"`, "auto-refresh is off by default")
	require.Contains(t, p.body, `href="/ops/?refresh=30" id="refresh-toggle"`)

	day := b.get(t, "/ops/?range=24h&refresh=30")
	require.Equal(t, http.StatusOK, day.status)
	require.Contains(t, day.body, `aria-current="page">last 24 h<`)
	require.Contains(t, day.body, `<meta http-equiv="refresh" content="30">`)
	require.Contains(t, day.body, `href="/ops/?range=24h" id="refresh-toggle"`, "the toggle turns it off again")
	require.Contains(t, day.body, `href="/ops/?range=1h&amp;refresh=30"`, "the window toggle keeps auto-refresh")
	require.Equal(t, 96, strings.Count(regexp.MustCompile(`(?s)id="chart-throughput".*?</figure>`).FindString(day.body), `class="hit"`))
}

// A pending event behind a failed head of its invoice says which event it waits for,
// links to it, and offers no Retry; the head keeps its Retry. Times read relative, with
// the absolute time on hover.
func TestBlockedEventNamesTheFailedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, head, paid := b.blocked(t, "HTTP 422")
	b.login(t)

	for _, path := range []string{"/ops/events?invoice=" + inv.Number, "/ops/events/" + paid.String(), "/ops/invoices/" + inv.Number} {
		p := b.get(t, path)
		require.Equal(t, http.StatusOK, p.status, path)
		require.Contains(t, p.body, `waiting for <a href="/ops/events/`+head.String()+`">invoice.issued #1</a> (failed)`, path)
		require.NotContains(t, p.body, `href="/ops/events/`+paid.String()+`/retry"`, path)
		require.Regexp(t, `<time datetime="[0-9T:Z-]+" title="[0-9 :Z-]+">(just now|\d+ s ago)</time>`, p.body, path)
	}
	list := b.get(t, "/ops/events?invoice="+inv.Number)
	require.Contains(t, list.body, `href="/ops/events/`+head.String()+`/retry"`, "the head can be retried")
	require.Contains(t, list.body, `href="/ops/events/`+head.String()+`/skip"`, "or skipped")
	require.Contains(t, list.body, ">"+inv.Number+"</a>")
	require.NotContains(t, list.body, inv.ID.String()+"</", "no invoice UUID where its number can be shown")
}

// An event an open circuit holds back shows the error of its last real request, and
// the deferral beside it.
func TestDeferredEventShowsItsRealError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, id := b.failed(t, "HTTP 503")
	_, err := b.DB.NewRaw(`UPDATE finance_outbox SET delivery_status = 'pending', last_status_code = 503,
		deferred_at = now(), deferred_by = 'circuit_open', next_attempt_at = now() + interval '30 seconds' WHERE id = ?`, id).Exec(b.Ctx)
	require.NoError(t, err)
	b.login(t)
	p := b.get(t, "/ops/events/"+id.String())
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="last-failure">HTTP 503<`)
	require.Contains(t, p.body, `id="deferred">Held by the open circuit`)
	require.NotContains(t, p.body, "circuit open: deferred")
	list := b.get(t, "/ops/events?status=pending")
	require.Contains(t, list.body, "held by the open circuit")
	require.Contains(t, list.body, "HTTP 503")
}

// Without logistics' answer the trace does not claim logistics has no record of a
// key: it says the record is not known, and why.
func TestTraceWithoutLogisticsSaysItDoesNotKnow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, _ := b.failed(t, "HTTP 400")
	b.login(t)
	p := b.get(t, "/ops/invoices/"+inv.Number)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "not known: logistics record unavailable")
	require.NotContains(t, p.body, "no record of this key")
}
