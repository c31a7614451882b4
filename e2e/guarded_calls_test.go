package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/egress/egresstest"
)

// deadLettering is a receiver that answers every event 422 with body, so each event
// is dead-lettered at once and paged with body as the receiver's answer.
func deadLettering(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/finance"
}

// alertState is the stored state of finance's dead-letter alert.
type alertState struct {
	Unsent, Failures int
	LastError        string
}

func deadLetterAlert(t *testing.T, env *harness.Env) alertState {
	t.Helper()
	var a alertState
	if query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_alerts WHERE kind = 'dead_letter'`) == 0 {
		return a
	}
	a.Unsent = query[int](t, env.FinanceDB, `SELECT unsent_count FROM finance_alerts WHERE kind = 'dead_letter'`)
	a.Failures = query[int](t, env.FinanceDB, `SELECT send_failures FROM finance_alerts WHERE kind = 'dead_letter'`)
	a.LastError = query[string](t, env.FinanceDB, `SELECT coalesce(last_send_error, '') FROM finance_alerts WHERE kind = 'dead_letter'`)
	return a
}

// With OUTBOUND_ALLOW=127.0.0.1/32, a Slack target (webhook or Web API) and
// LOGISTICS_API_URL on 127.0.0.2 are never dialed: finance starts, names each refused
// variable in a WARN at start, and the calls fail as blocked. The dead letter's page
// stays unsent and is retried, scheduled reconciliation stores a blocked error, the
// invoice trace says the guard refused logistics' record, and `finance reconcile`
// fails the same way. A listener on 127.0.0.2 sees no connection throughout.
func TestRefusedSlackAndLogisticsAPIAreNeverDialed(t *testing.T) {
	t.Parallel()
	trap := egresstest.Listen(t, "127.0.0.2:0")
	refused := trap.URL()
	t.Cleanup(func() { require.Zero(t, trap.Accepted(), "nothing reached 127.0.0.2") })
	slackTargets := map[string]map[string]string{
		"SLACK_WEBHOOK_URL": {"SLACK_WEBHOOK_URL": refused + "/services/T0/B0/X"},
		"SLACK_API_URL":     {"SLACK_TOKEN": "xoxb-e2e", "SLACK_CHANNEL": "#oncall", "SLACK_API_URL": refused + "/api/"},
	}
	for variable, slack := range slackTargets {
		t.Run(variable, func(t *testing.T) {
			t.Parallel()
			financeEnv := map[string]string{
				"LOGISTICS_API_URL": refused, "LOGISTICS_OPS_TOKEN": harness.OpsToken,
				"RECONCILE_SCHEDULE": "@every 1s", "ALERT_GATHER": "100ms",
			}
			for k, v := range slack {
				financeEnv[k] = v
			}
			env := harness.New(t, harness.Options{LogisticsURL: deadLettering(t, `{"type":"invalid-event"}`),
				FinanceEnv: financeEnv})
			for _, name := range []string{variable, "LOGISTICS_API_URL"} {
				require.Contains(t, env.Finance.Log(), `"msg":"`+name+` is refused by the SSRF guard: `)
			}
			inv := issue(t, env, "cust-refused")

			require.Eventually(t, func() bool {
				a := deadLetterAlert(t, env)
				return a.Failures >= 2 && a.Unsent == 1
			}, 30*time.Second, 50*time.Millisecond, "the page is kept and retried")
			require.Contains(t, deadLetterAlert(t, env).LastError, "blocked: loopback")

			require.Eventually(t, func() bool {
				return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_reconciliations WHERE error LIKE '%blocked: loopback%'`) > 0
			}, 15*time.Second, 50*time.Millisecond, "scheduled reconciliation fails as blocked")

			r := harness.Call(t, http.MethodGet, env.Finance.URL+"/v1/ops/invoices/"+inv.ID+"/trace", harness.OpsToken, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			var trace struct {
				Logistics struct{ Note string } `json:"logistics"`
			}
			r.JSON(t, &trace)
			require.Equal(t, "logistics record unavailable: the SSRF guard refuses LOGISTICS_API_URL (see OUTBOUND_ALLOW)",
				trace.Logistics.Note)

			cmd := exec.Command(filepath.Join(harness.Binaries(t), "finance"), "reconcile", "--since=10m")
			cmd.Env = []string{"DATABASE_URL=" + env.FinanceDB, "LOGISTICS_API_URL=" + refused,
				"LOGISTICS_OPS_TOKEN=" + harness.OpsToken, "OUTBOUND_ALLOW=127.0.0.1/32"}
			out, err := cmd.CombinedOutput()
			require.Error(t, err)
			require.Contains(t, string(out), "blocked: loopback")
		})
	}
}

// A Slack webhook that answers 307 to another stand-in is not followed: the other
// stand-in hears nothing, and the page stays unsent and is retried.
func TestSlackRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	other := newSlackStandIn(t, "ok")
	var redirected atomic.Int64
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	env := harness.New(t, harness.Options{LogisticsURL: deadLettering(t, `{"type":"invalid-event"}`),
		FinanceEnv: map[string]string{"SLACK_WEBHOOK_URL": redirecting.URL + "/services/T0/B0/X", "ALERT_GATHER": "100ms"}})
	issue(t, env, "cust-redirect")

	require.Eventually(t, func() bool {
		a := deadLetterAlert(t, env)
		return a.Failures >= 2 && a.Unsent == 1
	}, 30*time.Second, 50*time.Millisecond, "the page is kept and retried")
	require.Contains(t, deadLetterAlert(t, env).LastError, "307")
	require.GreaterOrEqual(t, redirected.Load(), int64(2))
	require.Empty(t, other.messages(""), "the redirect was not followed")
}

// A receiver's answer that would mention the channel and plant a labelled link reaches
// Slack as text: the stand-in sees &lt;!channel&gt;, and the message holds no < or >,
// so no mention or link markup at all; the dashboard URL is there as plain text.
func TestReceiverTextCannotMentionOrLinkInSlack(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	env := harness.New(t, harness.Options{LogisticsURL: deadLettering(t, `<!channel> <http://evil.example|x>`),
		FinanceEnv: map[string]string{"SLACK_WEBHOOK_URL": slack.URL, "ALERT_GATHER": "100ms"}})
	issue(t, env, "cust-mention")

	require.Eventually(t, func() bool { return len(slack.messages("events dead-lettered")) > 0 },
		30*time.Second, 50*time.Millisecond, "pages: %q", slack.messages(""))
	msg := slack.messages("events dead-lettered")[0]
	require.Contains(t, msg, "last error: rejected_by_receiver: HTTP 422 — &lt;!channel&gt; &lt;http://evil.example|x&gt;")
	require.False(t, strings.ContainsAny(msg, "<>"), "no mention or link markup: %q", msg)
	require.Contains(t, msg, "\nDashboard: http://"+env.Finance.Addr+"/ops/")
}
