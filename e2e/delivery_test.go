package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// A receiver that never answers, with the default-sized DISPATCH_TIMEOUT (longer than
// any fixed window after the request): each attempt is settled as a counted timeout,
// the event is dead-lettered after DISPATCH_MAX_ATTEMPTS of them and paged, the
// timeouts open the circuit, and a probe that times out re-opens it.
func TestReceiverThatNeverAnswers(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	g := newGateway(t, func(_ http.ResponseWriter, r *http.Request, g *gateway) bool { g.hang(r); return true })
	env := harness.New(t, harness.Options{LogisticsURL: g.URL, FinanceEnv: map[string]string{
		"DISPATCH_TIMEOUT": "6s", "DISPATCH_MAX_ATTEMPTS": "2", "DISPATCH_BACKOFF": "1s",
		"BREAKER_THRESHOLD": "2", "BREAKER_COOLDOWN": "1s",
		"SLACK_WEBHOOK_URL": slack.URL, "ALERT_GATHER": "100ms",
	}})
	first := issue(t, env, "cust-hang-1")
	require.Eventually(t, func() bool {
		return query[string](t, env.FinanceDB, `SELECT delivery_status FROM finance_outbox
			WHERE payload->>'invoice_id' = $1`, first.ID) == "failed"
	}, 40*time.Second, 50*time.Millisecond)
	require.Equal(t, "2 2 max_attempts_exhausted", query[string](t, env.FinanceDB, `SELECT delivery_attempts || ' ' ||
		request_count || ' ' || failed_reason FROM finance_outbox WHERE payload->>'invoice_id' = $1`, first.ID))
	require.Equal(t, "timeout,timeout", query[string](t, env.FinanceDB, `SELECT string_agg(a.error_class, ',')
		FROM finance_outbox_attempts a JOIN finance_outbox o ON o.id = a.outbox_id
		WHERE o.payload->>'invoice_id' = $1 AND a.duration_ms >= 5900`, first.ID), "two settled 6 s timeouts")
	require.Equal(t, "opened", query[string](t, env.FinanceDB, `SELECT last_transition FROM finance_breakers`))

	second := issue(t, env, "cust-hang-2")
	require.Eventually(t, func() bool {
		return query[string](t, env.FinanceDB, `SELECT coalesce(last_transition, '') FROM finance_breakers`) == "reopened"
	}, 30*time.Second, 50*time.Millisecond, "the probe's timeout re-opens the circuit")
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts a
		JOIN finance_outbox o ON o.id = a.outbox_id WHERE o.payload->>'invoice_id' = $1 AND a.error_class = 'timeout'`, second.ID))

	require.Eventually(t, func() bool {
		return len(slack.messages("events dead-lettered")) == 1 && len(slack.messages("circuit opened")) == 1 &&
			len(slack.messages("circuit re-opened")) == 1
	}, 20*time.Second, 50*time.Millisecond, "pages: %q", slack.messages(""))
}

// A receiver that answers 200 after 5.5 s, within an 8 s DISPATCH_TIMEOUT: each event
// is delivered with one request, never sent again.
func TestSlowSuccessIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(http.ResponseWriter, *http.Request, *gateway) bool {
		time.Sleep(5500 * time.Millisecond)
		return false
	})
	env := harness.New(t, harness.Options{LogisticsURL: g.URL, FinanceEnv: map[string]string{"DISPATCH_TIMEOUT": "8s"}})
	g.to(t, env)
	inv := issue(t, env, "cust-slow")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-slow").Status)
	waitForShipment(t, env, inv, "waiting", 30*time.Second)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'delivered'`) == 2
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 2, query[int](t, env.FinanceDB, `SELECT sum(request_count) FROM finance_outbox`))
	require.EqualValues(t, 2, g.single.Load()+g.batches.Load(), "each event sent once")
	require.Equal(t, 2, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
}

// Batch mode against a logistics that takes fewer items per batch than DISPATCH_BATCH,
// and against one without the batch endpoint (a rolling deploy): every event is
// delivered and none failed.
func TestBatchAgainstSmallerOrMissingBatchEndpoint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		logistics map[string]string
		noBatch   bool
	}{
		{"BATCH_MAX_ITEMS below DISPATCH_BATCH", map[string]string{"BATCH_MAX_ITEMS": "7"}, false},
		{"no batch endpoint", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, func(w http.ResponseWriter, r *http.Request, _ *gateway) bool {
				if c.noBatch && strings.HasSuffix(r.URL.Path, "/batch") {
					http.NotFound(w, r)
					return true
				}
				return false
			})
			env := harness.New(t, harness.Options{LogisticsURL: g.URL, LogisticsEnv: c.logistics,
				FinanceEnv: map[string]string{"DISPATCH_ENABLED": "false"}})
			g.to(t, env)
			const invoices = 60
			issueMany(t, env, "cust-batch-", invoices) // a backlog, nobody dispatching yet
			dispatcher := env.NewFinance(t, map[string]string{"DISPATCH_ENABLED": "true", "DISPATCH_MODE": "batch",
				"DISPATCH_BATCH": "50"})
			dispatcher.Start(t)
			require.Eventually(t, func() bool {
				return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox
					WHERE delivery_status <> 'pending'`) == invoices
			}, 30*time.Second, 50*time.Millisecond)
			require.Equal(t, invoices, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox
				WHERE delivery_status = 'delivered'`), "none failed")
			require.Equal(t, invoices, query[int](t, env.LogisticsDB, `SELECT count(*) FROM shipments
				WHERE state = 'awaiting_payment'`))
			require.Positive(t, g.batches.Load())
			if c.noBatch {
				require.EqualValues(t, invoices, g.single.Load(), "single requests after the batch endpoint's 404")
			}
		})
	}
}

// A receiver answering 409 ("not yet") to every event never opens the circuit, however
// many answers it gives.
func TestConflictsNeverOpenTheCircuit(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(w http.ResponseWriter, _ *http.Request, _ *gateway) bool {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"type":"event-not-applicable-yet","status":409}`)
		return true
	})
	env := harness.New(t, harness.Options{LogisticsURL: g.URL, FinanceEnv: map[string]string{
		"BREAKER_THRESHOLD": "2", "DISPATCH_MAX_ATTEMPTS": "100"}})
	issueMany(t, env, "cust-409-", 20)
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts WHERE status_code = 409`) >= 60
	}, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_breakers WHERE state <> 'closed'`))
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE deferred_at IS NOT NULL`))
}

// A dead letter is paged although the finance that settled it was SIGKILLed right
// after: the page is owed in the outbox row, and the next replica pages it.
func TestDeadLetterIsPagedAfterItsReplicaDies(t *testing.T) {
	t.Parallel()
	slack := newSlackStandIn(t, "ok")
	env, _ := pagingEnv(t, slack, map[string]string{"ALERT_GATHER": "3s"})
	inv := issue(t, env, "bad-killed")
	require.Eventually(t, func() bool {
		return query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status = 'failed'`) == 1
	}, 20*time.Second, time.Millisecond)
	env.Finance.Kill(t)
	require.Empty(t, slack.messages(""), "nothing was sent before the kill")

	next := env.NewFinance(t, nil)
	next.Start(t)
	require.Eventually(t, func() bool {
		return len(slack.messages("events dead-lettered — 1 in the last")) == 1
	}, 20*time.Second, 50*time.Millisecond, "pages: %q", slack.messages(""))
	require.Contains(t, slack.messages("")[0], fmt.Sprintf("invoice %s", inv.ID))
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE page_owed IS NOT NULL`))
}
