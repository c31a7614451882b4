package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// 50 invoices dead-lettered in a burst page a local Slack at least once and at most
// ten times, with counts that add up to 50, naming an event, an invoice, the last
// error and the dashboard.
func TestDeadLetterBurstPagesSlackWithCounts(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	env, _ := pagingEnv(t, slack, map[string]string{"ALERT_GATHER": "2s", "ALERT_REPEAT": "3s"})
	issueMany(t, env, "bad-", 50)

	require.Eventually(t, func() bool {
		return paged(slack.messages("events dead-lettered")) == 50
	}, 30*time.Second, 50*time.Millisecond, "pages: %q", slack.messages(""))
	require.Equal(t, 50, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`))
	msgs := slack.messages("events dead-lettered")
	require.GreaterOrEqual(t, len(msgs), 1)
	require.LessOrEqual(t, len(msgs), 10)
	require.Regexp(t, `e\.g\. event [0-9a-f-]{36}, invoice [0-9a-f-]{36}, last error: rejected_by_receiver: HTTP 422`, msgs[0])
	require.Contains(t, msgs[0], "Dashboard: http://"+env.Finance.Addr+"/ops/")
}

// A dead letter's page is Block Kit with the plain text as fallback: it links to the
// event's dashboard page, its invoice's trace and the failed events, all under
// DASHBOARD_URL, and names the runbook section.
func TestDeadLetterPageLinksToItsEvent(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	env, _ := pagingEnv(t, slack, map[string]string{"ALERT_GATHER": "100ms"})
	inv := issue(t, env, "bad-linked")
	require.Eventually(t, func() bool {
		return len(slack.matching("events dead-lettered")) == 1
	}, 20*time.Second, 50*time.Millisecond, "pages: %q", slack.messages(""))
	page := slack.matching("events dead-lettered")[0]
	event := query[string](t, env.FinanceDB, `SELECT id::text FROM finance_outbox WHERE delivery_status = 'failed'`)
	dashboard := "http://" + env.Finance.Addr + "/ops/"
	var blocks []struct {
		Type string
		Text struct{ Text string }
	}
	require.NoError(t, json.Unmarshal([]byte(page.Blocks), &blocks))
	require.Len(t, blocks, 3)
	require.Equal(t, page.Text, blocks[0].Text.Text, "the text is the first section")
	require.Contains(t, blocks[1].Text.Text, "<"+dashboard+"events/"+event+"|Event>")
	require.Contains(t, blocks[1].Text.Text, "<"+dashboard+"invoices/"+inv.ID+"|Invoice trace>")
	require.Contains(t, blocks[1].Text.Text, "<"+dashboard+"events?status=failed|All failed events>")
	require.Equal(t, "context", blocks[2].Type)
	require.Contains(t, page.Text, "Runbook: docs/operations.md § 6 Runbook › Event dead-lettered")
}

// Slack answering 500, or not answering at all, does not slow the delivery of other
// events: paid invoices still become waiting shipments within the usual half second,
// and the alerts that could not be sent stay stored for a retry.
func TestSlackOutageDoesNotSlowDelivery(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"500", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			slack := newSlackStandIn(t, mode)
			env, g := pagingEnv(t, slack, map[string]string{"ALERT_GATHER": "100ms", "DISPATCH_INTERVAL": "5s"})
			g.to(t, env)
			issueMany(t, env, "bad-", 20)

			var latencies []time.Duration
			for i := range 10 {
				latencies = append(latencies, payToWaiting(t, env, fmt.Sprintf("good-%d", i)))
			}
			slices.Sort(latencies)
			t.Logf("Slack %s: pay→waiting median %s, max %s", mode, latencies[len(latencies)/2], latencies[len(latencies)-1])
			require.Less(t, latencies[len(latencies)/2], time.Second, "a blocked dispatcher would wait out the Slack timeout (10 s)")
			require.Eventually(t, func() bool {
				return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_alerts
					WHERE kind = 'dead_letter' AND unsent_count > 0 AND (send_failures > 0 OR claim_token IS NOT NULL)`) == 1
			}, 30*time.Second, 50*time.Millisecond, "the unsent page is kept for a retry")
		})
	}
}

// One grep of both services' logs by the correlation id of the clerk's payment request
// shows the payment, its delivery and the logistics transaction.
func TestCorrelationIDFollowsThePaymentAcrossBothServices(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	inv := issue(t, env, "cust-trace")
	corr := "corr-" + uuid.NewString()
	r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
		map[string]any{"payment_id": "pay-trace", "amount_minor": inv.TotalMinor}, "X-Request-ID", corr)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.Equal(t, corr, r.Header.Get("X-Request-ID"))
	waitForShipment(t, env, inv, "waiting", 10*time.Second)

	// In batch mode, the default, logistics' access log line carries the batch
	// request's own id; the line of the item's transaction carries the payment's.
	want := map[*harness.Service][]string{
		env.Finance:   {`"msg":"http request"`, `"msg":"event delivered"`},
		env.Logistics: {`"msg":"webhook event processed"`},
	}
	require.Eventually(t, func() bool {
		for svc, msgs := range want {
			lines := grep(svc.Log(), corr)
			for _, msg := range msgs {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, msg) }) {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "finance:\n%s\nlogistics:\n%s", grep(env.Finance.Log(), corr), grep(env.Logistics.Log(), corr))
	payment := grep(env.Finance.Log(), corr)[0]
	require.Contains(t, payment, `"path":"/v1/invoices/:id/payments"`)
	require.Contains(t, strings.Join(grep(env.Finance.Log(), corr), "\n"), `"event_type":"invoice.paid"`)
	require.Contains(t, strings.Join(grep(env.Logistics.Log(), corr), "\n"), `"invoice_id":"`+inv.ID+`"`)
}

// grep returns the lines of log that contain s.
func grep(log, s string) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// Reconciliation over a clean run reports nothing; after one processed-event row is
// deleted by hand in logistics it reports exactly that key, from the CLI and from the
// scheduled job, which pages. Both services' /metrics show the deliveries.
func TestReconciliationFindsADeletedProcessedEvent(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	env := harness.New(t, harness.Options{FinanceEnv: map[string]string{
		"LOGISTICS_OPS_TOKEN": harness.OpsToken, "RECONCILE_SCHEDULE": "@every 1s",
		"SLACK_WEBHOOK_URL": slack.URL, "ALERT_GATHER": "100ms",
	}})
	var ids []string
	for i := range 5 {
		inv := issue(t, env, fmt.Sprintf("cust-rec-%d", i))
		require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-"+inv.ID).Status)
		ids = append(ids, inv.ID)
	}
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'delivered'`) == 10
	}, 15*time.Second, 10*time.Millisecond)

	out, err := reconcileCLI(t, env)
	require.NoError(t, err, out, "a clean window exits 0")
	require.Regexp(t, `(?m)^delivered\s+10 `, out)
	require.Regexp(t, `(?m)^delivered but never applied\s+0$`, out)
	require.Regexp(t, `(?m)^applied but unknown to finance\s+0$`, out)
	require.Regexp(t, `(?m)^pending far past schedule\s+0$`, out)

	lost := "invoice.paid:" + ids[2] + ":pay-" + ids[2]
	deleted := query[string](t, env.LogisticsDB, `DELETE FROM logistics_processed_events WHERE idempotency_key = $1
		RETURNING idempotency_key`, lost)
	require.Equal(t, lost, deleted)
	out, err = reconcileCLI(t, env)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode(), "discrepancies exit 1: %s", out)
	require.Regexp(t, `(?m)^delivered but never applied\s+1$`, out)
	require.Regexp(t, `(?m)^applied but unknown to finance\s+0$`, out)
	require.Equal(t, 1, strings.Count(out, "  invoice."), out)
	require.Contains(t, out, "  "+lost+"  ")

	require.Eventually(t, func() bool {
		return len(slack.messages("events delivered but never applied by logistics")) > 0
	}, 15*time.Second, 20*time.Millisecond, "the scheduled run pages")
	require.Contains(t, slack.messages("never applied")[0], "e.g. key "+lost)
	require.Equal(t, lost, query[string](t, env.FinanceDB, `SELECT missing->0->>'idempotency_key' FROM finance_reconciliations
		ORDER BY id DESC LIMIT 1`))

	// Ten events, delivered in however many requests the mode makes of them (batch
	// mode, the default, sends what is due together).
	scrapes := map[*harness.Service][]string{
		env.Finance: {`finance_deliveries_total\{answer="200",outcome="delivered"\} 10\n`, `finance_outbox_events\{status="pending"\} 0\n`,
			`finance_delivery_end_to_end_seconds_count 10\n`, `finance_delivery_duration_seconds_count [1-9][0-9]*\n`},
		env.Logistics: {`logistics_webhook_requests_total\{status="200"\} [1-9][0-9]*\n`, `logistics_webhook_duplicates_total 0\n`,
			`logistics_webhook_duration_seconds_count [1-9][0-9]*\n`},
	}
	for svc, series := range scrapes {
		r := harness.Call(t, http.MethodGet, svc.URL+"/metrics", "", nil)
		require.Equal(t, http.StatusOK, r.Status)
		for _, s := range series {
			require.Regexp(t, s, string(r.Body))
		}
	}
}

// reconcileCLI runs `finance reconcile --since=10m` against env and returns its output.
func reconcileCLI(t *testing.T, env *harness.Env) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.Binaries(t), "finance"), "reconcile", "--since=10m")
	cmd.Env = []string{"DATABASE_URL=" + env.FinanceDB, "LOGISTICS_API_URL=" + env.Logistics.URL,
		"LOGISTICS_OPS_TOKEN=" + harness.OpsToken, "OUTBOUND_ALLOW=127.0.0.1/32"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
