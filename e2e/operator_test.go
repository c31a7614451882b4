package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// opsEvent is an event as the ops API shows it.
type opsEvent struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	IdempotencyKey string `json:"idempotency_key"`
	Status         string `json:"status"`
	Requests       int    `json:"requests"`
	Destination    string `json:"destination"`
	AttemptLog     []struct {
		StatusCode      int    `json:"status_code"`
		ResponseSnippet string `json:"response_snippet"`
	} `json:"attempt_log"`
	Audit []auditItem `json:"audit"`
}

type auditItem struct {
	Actor       string  `json:"actor"`
	Action      string  `json:"action"`
	Reason      string  `json:"reason"`
	EventID     *string `json:"event_id"`
	Count       int     `json:"count"`
	Destination string  `json:"destination"`
}

// opsCall sends one request to svc's ops API with the ops token.
func opsCall(t *testing.T, svc *harness.Service, method, path string, body any) harness.Response {
	t.Helper()
	return harness.Call(t, method, svc.URL+path, harness.OpsToken, body)
}

// opsOK sends one request to svc's ops API, requires a 200 and decodes the answer.
func opsOK(t *testing.T, svc *harness.Service, method, path string, body, v any) {
	t.Helper()
	r := opsCall(t, svc, method, path, body)
	require.Equal(t, http.StatusOK, r.Status, "%s %s: %s", method, path, r.Body)
	r.JSON(t, v)
}

// eventOf returns the event of type typ of invoice inv, with its attempts and audit.
func eventOf(t *testing.T, svc *harness.Service, inv invoice, typ string) opsEvent {
	t.Helper()
	var page struct {
		Items []opsEvent `json:"items"`
	}
	opsOK(t, svc, http.MethodGet, "/v1/ops/outbox/events?invoice_id="+inv.ID+"&type="+typ, nil, &page)
	require.Len(t, page.Items, 1)
	var ev opsEvent
	opsOK(t, svc, http.MethodGet, "/v1/ops/outbox/events/"+page.Items[0].ID, nil, &ev)
	return ev
}

func auditOf(t *testing.T, svc *harness.Service, query string) []auditItem {
	t.Helper()
	var page struct {
		Items []auditItem `json:"items"`
	}
	opsOK(t, svc, http.MethodGet, "/v1/ops/audit?"+query, nil, &page)
	return page.Items
}

// A dead-lettered invoice.issued holds its invoice.paid back; skipped with a reason,
// the paid event is delivered and the shipment reaches waiting. The audit log shows
// the skip with its actor and reason. Before that, retry and skip by filter with
// dry_run answer the count and change nothing.
func TestSkipLetsTheInvoiceGoOn(t *testing.T) {
	t.Parallel()
	g := newGateway(t, rejectIssued)
	env := harness.New(t, harness.Options{LogisticsURL: g.URL})
	g.to(t, env)
	inv := issue(t, env, "skip-1")
	require.Eventually(t, func() bool { return eventOf(t, env.Finance, inv, "invoice.issued").Status == "failed" },
		20*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-skip-1").Status)
	time.Sleep(500 * time.Millisecond) // time enough to deliver it, were it not held back
	paid := eventOf(t, env.Finance, inv, "invoice.paid")
	require.Equal(t, "pending", paid.Status)
	require.Zero(t, paid.Requests, "invoice.paid waits behind its dead head")

	before := query[int](t, env.FinanceDB, `SELECT sum(request_count) FROM finance_outbox`)
	for _, route := range []string{"/v1/ops/outbox/retry", "/v1/ops/outbox/skip"} {
		var res map[string]any
		opsOK(t, env.Finance, http.MethodPost, route, map[string]any{"status": "failed", "dry_run": true,
			"reason": "how many?"}, &res)
		require.Equal(t, true, res["dry_run"])
		require.Equal(t, false, res["more"])
		require.Contains(t, []any{res["retried"], res["skipped"]}, 1.0, "%v", res)
	}
	require.Equal(t, "failed", eventOf(t, env.Finance, inv, "invoice.issued").Status, "a dry run changes nothing")
	require.Equal(t, before, query[int](t, env.FinanceDB, `SELECT sum(request_count) FROM finance_outbox`))
	require.Empty(t, auditOf(t, env.Finance, ""), "a dry run records nothing")

	head := eventOf(t, env.Finance, inv, "invoice.issued")
	r := opsCall(t, env.Finance, http.MethodPost, "/v1/ops/outbox/events/"+head.ID+"/skip", map[string]any{"reason": " "})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	const why = "INC-42: logistics will never take this issued event; the payment must go through"
	opsOK(t, env.Finance, http.MethodPost, "/v1/ops/outbox/events/"+head.ID+"/skip", map[string]any{"reason": why}, &head)
	require.Equal(t, "skipped", head.Status)

	waitForShipment(t, env, inv, "waiting", 10*time.Second)
	items := auditOf(t, env.Finance, "event_id="+head.ID)
	require.Len(t, items, 1)
	require.Equal(t, "skip", items[0].Action)
	require.True(t, strings.HasPrefix(items[0].Actor, "ops:"), items[0].Actor)
	require.Equal(t, why, items[0].Reason)
	require.Equal(t, 1, items[0].Count)
	require.Equal(t, head.ID, *items[0].EventID)
	require.Equal(t, items, eventOf(t, env.Finance, inv, "invoice.issued").Audit)
}

// A delivered event resent reaches logistics again under the same key, and logistics
// answers duplicate: nothing is applied twice.
func TestResendIsADuplicateAtLogistics(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	inv := issue(t, env, "cust-resend")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-resend").Status)
	waitForShipment(t, env, inv, "waiting", 10*time.Second)
	require.Eventually(t, func() bool { return eventOf(t, env.Finance, inv, "invoice.paid").Status == "delivered" },
		10*time.Second, 20*time.Millisecond)

	paid := eventOf(t, env.Finance, inv, "invoice.paid")
	opsOK(t, env.Finance, http.MethodPost, "/v1/ops/outbox/events/"+paid.ID+"/resend",
		map[string]any{"reason": "logistics asks for it again"}, &paid)
	require.Eventually(t, func() bool {
		paid = eventOf(t, env.Finance, inv, "invoice.paid")
		return paid.Status == "delivered" && len(paid.AttemptLog) == 2
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 200, paid.AttemptLog[1].StatusCode)
	require.Contains(t, paid.AttemptLog[1].ResponseSnippet, `"duplicate":true`)
	require.Equal(t, 2, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events WHERE invoice_id = $1`, inv.ID))
	require.Equal(t, 1, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events
		WHERE idempotency_key = $1`, paid.IdempotencyKey), "the same key")
	items := auditOf(t, env.Finance, "invoice_id="+inv.Number)
	require.Len(t, items, 1)
	require.Equal(t, "resend", items[0].Action)
	require.Equal(t, "logistics asks for it again", items[0].Reason)
}

// Events written while LOGISTICS_WEBHOOK_URL pointed at a dead address are moved to
// the new one by retarget and delivered: the dead-lettered invoice.issued (one attempt
// allowed) and the invoice.paid waiting behind it.
func TestRetargetMovesEventsToTheCurrentURL(t *testing.T) {
	t.Parallel()
	dead, err := harness.FreeAddr()
	require.NoError(t, err)
	old := "http://" + dead + "/webhooks/finance"
	env := harness.New(t, harness.Options{LogisticsURL: old, FinanceEnv: map[string]string{"DISPATCH_MAX_ATTEMPTS": "1"}})
	inv := issue(t, env, "cust-moved")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-moved").Status)
	require.Eventually(t, func() bool { return eventOf(t, env.Finance, inv, "invoice.issued").Status == "failed" },
		10*time.Second, 20*time.Millisecond, "the only attempt went to the dead address")

	env.Finance.Stop(t)
	current := env.NewFinance(t, map[string]string{"LOGISTICS_WEBHOOK_URL": env.Logistics.URL + "/webhooks/finance"})
	current.Start(t)
	r := opsCall(t, current, http.MethodPost, "/v1/ops/outbox/retarget", map[string]any{"from": old})
	require.Equal(t, http.StatusBadRequest, r.Status, "a reason is required: %s", r.Body)
	var res struct {
		Retargeted int `json:"retargeted"`
	}
	opsOK(t, current, http.MethodPost, "/v1/ops/outbox/retarget", map[string]any{"from": old,
		"reason": "logistics moved to a new host"}, &res)
	require.Equal(t, 2, res.Retargeted)

	waitForShipment(t, env, inv, "waiting", 10*time.Second)
	require.Equal(t, env.Logistics.URL+"/webhooks/finance", eventOf(t, current, inv, "invoice.paid").Destination)
	items := auditOf(t, current, "")
	require.Len(t, items, 1)
	require.Equal(t, "retarget", items[0].Action)
	require.Equal(t, 2, items[0].Count)
	require.Equal(t, env.Logistics.URL+"/webhooks/finance", items[0].Destination)
}

// With two replicas delivering, a pause through one stops every request to the
// destination on both from their next one: events are deferred without a request and
// without spending attempts. Resumed through the other, they are delivered within
// seconds, not after the pause's minute-long deferral. Both are in the audit log.
func TestPauseStopsEveryReplica(t *testing.T) {
	t.Parallel()
	var paused atomic.Bool
	var sentWhilePaused atomic.Int64
	g := newGateway(t, func(http.ResponseWriter, *http.Request, *gateway) bool {
		if paused.Load() {
			sentWhilePaused.Add(1)
		}
		return false
	})
	env := harness.New(t, harness.Options{LogisticsURL: g.URL,
		FinanceEnv: map[string]string{"DISPATCH_BATCH": "1", "DISPATCH_CONCURRENCY": "1"}})
	g.to(t, env)
	other := env.NewFinance(t, nil)
	other.Start(t)
	first := issue(t, env, "cust-before-pause")
	waitForShipment(t, env, first, "awaiting_payment", 10*time.Second)

	dest := map[string]any{"destination": g.URL, "reason": "logistics is migrating its database"}
	var res map[string]any
	opsOK(t, env.Finance, http.MethodPost, "/v1/ops/destinations/pause", dest, &res)
	paused.Store(true)
	require.Equal(t, true, res["paused"])

	// Issue through both replicas until each has deferred an event: every replica
	// obeys the pause, whichever claims.
	replicas := []*harness.Service{env.Finance, other}
	var invoices []invoice
	deferred := func(s *harness.Service) bool {
		return strings.Contains(s.Log(), `"msg":"events deferred: destination paused"`)
	}
	for i := 0; i < 60 && !(deferred(env.Finance) && deferred(other)); i++ {
		api := replicas[i%2]
		r := harness.Call(t, http.MethodPost, api.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
			"customer_id": fmt.Sprintf("cust-paused-%d", i), "currency": "EUR", "total_minor": 1000})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		var inv invoice
		r.JSON(t, &inv)
		invoices = append(invoices, inv)
		require.Eventually(t, func() bool {
			return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox
				WHERE payload->>'invoice_id' = $1 AND deferred_by = 'paused'`, inv.ID) == 1
		}, 10*time.Second, 10*time.Millisecond, "the event is deferred for the pause")
	}
	require.True(t, deferred(env.Finance) && deferred(other), "both replicas claimed and deferred")
	t.Logf("%d events deferred before both replicas had deferred one", len(invoices))
	require.Zero(t, sentWhilePaused.Load(), "no request reached the paused destination")
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox
		WHERE deferred_by = 'paused' AND (request_count > 0 OR delivery_attempts > 0)`), "no attempt spent")

	paused.Store(false)
	resumedAt := time.Now()
	opsOK(t, other, http.MethodPost, "/v1/ops/destinations/resume", map[string]any{"destination": g.URL,
		"reason": "migration done"}, &res)
	require.Equal(t, float64(len(invoices)), res["hastened"])
	for _, inv := range invoices {
		waitForShipment(t, env, inv, "awaiting_payment", 10*time.Second)
	}
	require.Less(t, time.Since(resumedAt), 10*time.Second, "hastened, not waited out (a pause defers for a minute)")

	items := auditOf(t, other, "")
	require.Len(t, items, 2)
	require.Equal(t, []string{"resume", "pause"}, []string{items[0].Action, items[1].Action})
	require.Equal(t, []string{g.URL, g.URL}, []string{items[0].Destination, items[1].Destination})
	require.Equal(t, "logistics is migrating its database", items[1].Reason)
	require.Equal(t, len(invoices), items[0].Count)
}
