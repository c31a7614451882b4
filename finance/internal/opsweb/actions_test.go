package opsweb_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
)

// auditCount is how many audit entries record action.
func (b *bundle) auditCount(t *testing.T, action string) int {
	t.Helper()
	var n int
	require.NoError(t, b.DB.NewRaw(`SELECT count(*) FROM finance_operator_actions WHERE action = ?`, action).Scan(b.Ctx, &n))
	return n
}

func (b *bundle) status(t *testing.T, id uuid.UUID) string {
	t.Helper()
	d, err := b.Outbox.Detail(b.Ctx, b.DB, id)
	require.NoError(t, err)
	return d.Status
}

// confirm opens an action's confirmation page and posts its form with reason.
func (b *bundle) confirm(t *testing.T, path, reason string) page {
	t.Helper()
	p := b.get(t, path)
	require.Equal(t, http.StatusOK, p.status, p.body)
	form := url.Values{"csrf": {csrfOf(t, p.body)}, "reason": {reason}}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		if m[1] != "csrf" {
			form.Set(m[1], m[2])
		}
	}
	action := regexp.MustCompile(`<form method="post" action="([^"]+)" class="confirm"`).FindStringSubmatch(p.body)
	require.NotNil(t, action, "the confirmation page has its form")
	return b.post(t, action[1], form, b.srv.URL)
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)

// Skipping a dead letter from its page gives it up, lets its invoice's later event
// go on, and shows who skipped it and why on the event page and the invoice trace.
func TestSkipADeadLetterFromItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, head, _ := b.blocked(t, "HTTP 422 invalid-event")
	b.login(t)

	p := b.get(t, "/ops/events/"+head.String())
	require.Contains(t, p.body, `href="/ops/events/`+head.String()+`/skip"`)
	require.Contains(t, p.body, `id="no-actions"`)
	p = b.get(t, "/ops/events/"+head.String()+"/skip")
	require.Contains(t, p.body, "never sent again", "the page says what a skip does")
	require.Contains(t, p.body, "HTTP 422 invalid-event", "and shows the event's failure")

	p = b.confirm(t, "/ops/events/"+head.String()+"/skip", "poison payload, fixed in logistics by hand")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, outbox.StatusSkipped, b.status(t, head))
	p = b.get(t, p.location)
	require.Contains(t, p.body, "Skipped: the event is never sent again")
	require.Contains(t, p.body, "poison payload, fixed in logistics by hand")
	require.NotContains(t, p.body, `href="/ops/events/`+head.String()+`/skip"`, "nothing left to skip")
	require.NotContains(t, p.body, `href="/ops/events/`+head.String()+`/retry"`, "nor to retry")

	trace := b.get(t, "/ops/invoices/"+inv.Number)
	require.Contains(t, trace.body, "poison payload, fixed in logistics by hand", "the trace shows the action")
	require.NotContains(t, trace.body, "waiting for", "the paid event waits no more")

	p = b.post(t, "/ops/events/"+head.String()+"/skip", url.Values{"csrf": {csrfOf(t, trace.body)}, "reason": {"again"}}, b.srv.URL)
	require.Equal(t, http.StatusConflict, p.status)
	require.Equal(t, 1, b.auditCount(t, "skip"))
	require.Equal(t, http.StatusNotFound, b.get(t, "/ops/events/"+head.String()+"/delete").status)

	audit := b.get(t, "/ops/audit")
	require.Equal(t, http.StatusOK, audit.status)
	require.Contains(t, audit.body, "poison payload, fixed in logistics by hand")
}

// Retry all and Skip all show a dry run's count on their confirmation page, change
// nothing until confirmed, and then change exactly what the filter selects.
func TestBulkActionsShowADryRunFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []uuid.UUID
	for range 3 {
		_, id := b.failed(t, "HTTP 400")
		ids = append(ids, id)
	}
	b.login(t)

	list := b.get(t, "/ops/events?status=failed")
	require.Contains(t, list.body, `id="retry-all"`)
	require.Contains(t, list.body, `id="skip-all"`)
	require.NotContains(t, b.get(t, "/ops/events?status=delivered").body, `id="retry-all"`)

	p := b.get(t, "/ops/bulk/retry?status=failed")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<strong id="dry-run-count">3</strong>`)
	for _, id := range ids {
		require.Equal(t, outbox.StatusFailed, b.status(t, id), "a dry run changes nothing")
	}
	require.Zero(t, b.auditCount(t, "retry"), "nor records anything")

	p = b.confirm(t, "/ops/bulk/retry?status=failed", "receiver redeployed")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = b.get(t, p.location)
	require.Contains(t, p.body, "Replayed 3 events")
	for _, id := range ids {
		require.Equal(t, outbox.StatusPending, b.status(t, id))
	}
	require.Equal(t, 1, b.auditCount(t, "retry"))

	_, err := b.DB.NewRaw(`UPDATE finance_outbox SET delivery_status = 'failed' WHERE id = ?`, ids[0]).Exec(b.Ctx)
	require.NoError(t, err)
	p = b.get(t, "/ops/bulk/skip?status=failed")
	require.Contains(t, p.body, `<strong id="dry-run-count">1</strong>`)
	require.Equal(t, http.StatusBadRequest, b.get(t, "/ops/bulk/skip?status=pending").status, "only dead letters are skipped")
	require.Equal(t, http.StatusNotFound, b.get(t, "/ops/bulk/delete?status=failed").status)
}

// Pause and resume from the destinations panel; retarget an old destination's events.
func TestDestinationActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, moved := b.failed(t, "HTTP 404")
	const old = "http://127.0.0.1:9/old"
	_, err := b.DB.NewRaw(`UPDATE finance_outbox SET destination = ? WHERE id = ?`, old, moved).Exec(b.Ctx)
	require.NoError(t, err)
	b.login(t)

	p := b.get(t, "/ops/")
	require.Contains(t, p.body, `<code>`+destination+`</code> <span class="muted">current</span>`)
	require.Contains(t, p.body, `href="/ops/destinations/pause?destination=`+url.QueryEscape(destination)+`"`)
	require.Contains(t, p.body, "0 pending · 1 failed", "the old destination's dead letter")

	ev := b.get(t, "/ops/events/"+moved.String())
	require.Contains(t, ev.body, `id="retarget"`, "the event is addressed to an old destination")

	p = b.confirm(t, "/ops/destinations/pause?destination="+url.QueryEscape(destination), "logistics migrating its database")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = b.get(t, p.location)
	require.Contains(t, p.body, "Paused: no replica sends")
	require.Contains(t, p.body, `>paused</span>`)
	require.Contains(t, b.get(t, "/ops/destinations/pause?destination="+url.QueryEscape(destination)).body, "paused already")
	token := csrfOf(t, p.body)
	again := b.post(t, "/ops/destinations/pause", url.Values{"csrf": {token}, "reason": {"twice"},
		"destination": {destination}}, b.srv.URL)
	require.Equal(t, http.StatusConflict, again.status, "a second pause changes nothing")
	p = b.confirm(t, "/ops/destinations/resume?destination="+url.QueryEscape(destination), "migration done")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)

	p = b.confirm(t, "/ops/destinations/retarget?destination="+url.QueryEscape(old), "logistics moved")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	d, err := b.Outbox.Detail(b.Ctx, b.DB, moved)
	require.NoError(t, err)
	require.Equal(t, destination, d.Destination)
	p = b.post(t, "/ops/destinations/retarget", url.Values{"csrf": {token}, "reason": {"to itself"},
		"destination": {destination}}, b.srv.URL)
	require.Equal(t, http.StatusConflict, p.status, "retargeting the current destination is refused")
	require.Contains(t, p.body, "nowhere to move")
	for _, a := range []string{"pause", "resume", "retarget"} {
		require.Equal(t, 1, b.auditCount(t, a), a)
	}
}

// What on-call meets when a page and the event no longer agree: an action that does
// not apply offers no form and says why; one refused because the event moved on (a
// colleague acted first) shows the confirmation page again with the reason kept; a
// notice in a link the event does not reflect is not shown; an event held by a pause
// offers Resume, not Retry.
func TestActionsThatDoNotApplySayWhy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, head, paid := b.blocked(t, "HTTP 422")
	b.login(t)

	p := b.get(t, "/ops/events/"+paid.String()+"/skip")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="inapplicable"`)
	require.Contains(t, p.body, "this one is pending")
	require.NotContains(t, p.body, `id="confirm-form"`)
	require.Contains(t, b.get(t, "/ops/events/"+paid.String()+"/retry").body, "waits for an earlier failed event")

	skip := "/ops/events/" + head.String() + "/skip"
	form := url.Values{"csrf": {csrfOf(t, b.get(t, skip).body)}, "reason": {"poison"}}
	require.Equal(t, http.StatusSeeOther, b.post(t, skip, form, b.srv.URL).status)
	form.Set("reason", "a colleague's second try")
	p = b.post(t, skip, form, b.srv.URL)
	require.Equal(t, http.StatusConflict, p.status, "the event moved on")
	require.Contains(t, p.body, "skipped this event")
	require.Equal(t, 1, b.auditCount(t, "skip"))

	require.NotContains(t, b.get(t, "/ops/events/"+paid.String()+"?done=skip").body, `id="notice"`,
		"a pending event is not announced as skipped")
	p = b.get(t, "/ops/events/"+head.String()+"?done=skip&refresh=30")
	require.Contains(t, p.body, `id="notice"`)
	require.NotContains(t, p.body, "done=skip", "the auto-refresh link does not repeat the notice")

	require.Equal(t, http.StatusSeeOther, b.confirm(t, "/ops/destinations/pause?destination="+url.QueryEscape(destination), "migration").status)
	_, err := b.DB.NewRaw(`UPDATE finance_outbox SET deferred_at = now(), deferred_by = 'paused',
		next_attempt_at = now() + interval '1 minute' WHERE id = ?`, paid).Exec(b.Ctx)
	require.NoError(t, err)
	p = b.get(t, "/ops/events/"+paid.String())
	require.Contains(t, p.body, `id="paused"`)
	require.NotContains(t, p.body, `id="retry"`, "a retry cannot pass the pause")
	require.Contains(t, p.body, "/ops/destinations/resume?destination=")

	require.Equal(t, http.StatusNotFound, b.get(t, "/ops/destinations/pause?destination="+url.QueryEscape(destination+" ")).status,
		"only the destinations the dashboard lists")
	p = b.get(t, "/ops/destinations/pause?destination="+url.QueryEscape(destination))
	require.Contains(t, p.body, "paused already")
	require.NotContains(t, p.body, `id="confirm-form"`)
	require.Contains(t, b.get(t, "/ops/destinations/retarget?destination="+url.QueryEscape(destination)).body,
		"nowhere to move")

	require.Equal(t, http.StatusBadRequest, b.get(t, "/ops/bulk/retry?status=failed&type=%00").status)
	require.Equal(t, http.StatusBadRequest, b.get(t, "/ops/events?type=%00").status)
	p = b.post(t, "/ops/login", url.Values{"token": {opsToken}, "next": {"/ops/bulk/skip?status=failed"}}, b.srv.URL)
	require.Equal(t, "/ops/", p.location, "sign-in never lands on an action's confirmation")
}
