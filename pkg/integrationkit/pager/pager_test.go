package pager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// schema is the alert table the tests use.
var schema = pager.Schema("alerts")

func newDB(t *testing.T) *bun.DB {
	t.Helper()
	db, _ := pgtest.NewDB(t, "kitpager", fstest.MapFS{
		"000001_alerts.up.sql":   {Data: []byte(schema)},
		"000001_alerts.down.sql": {Data: []byte("DROP TABLE alerts;")},
	})
	return db
}

// slackStandIn answers as Slack's incoming webhook does and keeps every message; fail
// makes it answer 500 to the first n posts, and hang makes every post wait until the
// test ends.
type slackStandIn struct {
	mu    sync.Mutex
	texts []string
	fail  int
	hang  chan struct{}
	url   string
}

func newSlack(t *testing.T, fail int, hang bool) *slackStandIn {
	t.Helper()
	s := &slackStandIn{fail: fail}
	if hang {
		s.hang = make(chan struct{})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hang != nil {
			select {
			case <-s.hang:
			case <-r.Context().Done():
			}
			return
		}
		var msg struct{ Text string }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &msg)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.fail > 0 {
			s.fail--
			http.Error(w, "slack is down", http.StatusInternalServerError)
			return
		}
		s.texts = append(s.texts, msg.Text)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(func() {
		if s.hang != nil {
			close(s.hang)
		}
		srv.Close()
	})
	s.url = srv.URL + "/services/T0/B0/X"
	return s
}

func (s *slackStandIn) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

var countRE = regexp.MustCompile(` — (\d+) in the last `)

// counted adds up the counts the messages report.
func counted(texts []string) int {
	n := 0
	for _, s := range texts {
		if m := countRE.FindStringSubmatch(s); m != nil {
			c, _ := strconv.Atoi(m[1])
			n += c
		}
	}
	return n
}

func start(t *testing.T, db *bun.DB, slack *slackStandIn, cfg pager.Config, debtors ...pager.Debtor) *pager.Pager {
	t.Helper()
	sender, err := pager.NewSlackSender(pager.SlackConfig{WebhookURL: slack.url}, loopback(t))
	require.NoError(t, err)
	cfg.Table = "alerts"
	p, err := pager.New(db, cfg, pager.Deps{Sender: sender, Debtors: debtors})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return p
}

func deadLetter(i int) pager.Alert {
	return pager.Alert{Key: "dead_letter:http://x", Kind: "dead_letter", Title: "events dead-lettered",
		EventID: fmt.Sprintf("ev-%d", i), Aggregate: fmt.Sprintf("inv-%d", i), Error: "HTTP 422"}
}

// A burst of 50 occurrences on two replicas becomes one message (or two or three, when
// a replica's write lands after the first was sent) that counts all 50, with an
// example, the dashboard link and the service's name.
func TestBurstIsOneMessageWithCountsAcrossReplicas(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	slack := newSlack(t, 0, false)
	cfg := pager.Config{Service: "finance", AggregateLabel: "invoice", DashboardURL: "http://ops.example/ops/",
		Gather: 500 * time.Millisecond, Repeat: 2 * time.Second, Poll: 50 * time.Millisecond}
	a, b := start(t, db, slack, cfg), start(t, db, slack, cfg)
	for i := range 50 {
		[]*pager.Pager{a, b}[i%2].Notify(deadLetter(i))
	}
	require.Eventually(t, func() bool { return counted(slack.messages()) == 50 }, 10*time.Second, 10*time.Millisecond)
	msgs := slack.messages()
	require.LessOrEqual(t, len(msgs), 3, "a burst is one window, two if a replica's write came late")
	require.Contains(t, msgs[0], "*[finance]* events dead-lettered — ")
	require.Regexp(t, `e\.g\. event ev-\d+, invoice inv-\d+, last error: HTTP 422`, msgs[0])
	require.Contains(t, msgs[0], "Dashboard: http://ops.example/ops/")
}

// Within Repeat a key is not sent again: later occurrences wait for the next window.
func TestRepeatRateLimitsAKey(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	slack := newSlack(t, 0, false)
	p := start(t, db, slack, pager.Config{Gather: time.Millisecond, Repeat: time.Hour, Poll: 20 * time.Millisecond})
	p.Notify(deadLetter(1))
	require.Eventually(t, func() bool { return len(slack.messages()) == 1 }, 10*time.Second, 10*time.Millisecond)
	for i := range 20 {
		p.Notify(deadLetter(i))
	}
	var unsent int
	require.Eventually(t, func() bool {
		require.NoError(t, db.NewRaw(`SELECT unsent_count FROM alerts`).Scan(context.Background(), &unsent))
		return unsent == 20
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, slack.messages(), 1, "held back until the hour is over")
}

// Slack answering 500 delays the message but does not lose it.
func TestFailedSendsAreRetried(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	slack := newSlack(t, 2, false)
	p := start(t, db, slack, pager.Config{Gather: time.Millisecond, Poll: 20 * time.Millisecond,
		Retry: []time.Duration{50 * time.Millisecond}})
	p.Notify(deadLetter(7))
	require.Eventually(t, func() bool { return counted(slack.messages()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		var failures int
		require.NoError(t, db.NewRaw(`SELECT send_failures FROM alerts`).Scan(context.Background(), &failures))
		return failures == 0
	}, 10*time.Second, 10*time.Millisecond, "reset by the successful send")
}

// A hanging Slack costs the sender its timeout, never a caller of Notify.
func TestNotifyNeverWaitsForSlack(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	slack := newSlack(t, 0, true)
	p := start(t, db, slack, pager.Config{Gather: time.Millisecond, SendTimeout: 200 * time.Millisecond,
		Poll: 20 * time.Millisecond, Retry: []time.Duration{50 * time.Millisecond}})
	begin := time.Now()
	for i := range 1000 {
		p.Notify(pager.Alert{Key: fmt.Sprintf("k-%d", i%50), Kind: "dead_letter", Title: "x"})
	}
	// Waiting for Slack even once per key would take 50 × 200 ms.
	require.Less(t, time.Since(begin), 2*time.Second)
	var failures int
	require.Eventually(t, func() bool {
		require.NoError(t, db.NewRaw(`SELECT coalesce(max(send_failures), 0) FROM alerts`).Scan(context.Background(), &failures))
		return failures > 0
	}, 10*time.Second, 10*time.Millisecond, "timed-out sends are recorded for retry")
	var total int
	require.Eventually(t, func() bool {
		require.NoError(t, db.NewRaw(`SELECT coalesce(sum(total_count), 0) FROM alerts`).Scan(context.Background(), &total))
		return total == 1000
	}, 10*time.Second, 10*time.Millisecond, "every occurrence is counted")
}

func TestSlackConfigIsValidated(t *testing.T) {
	t.Parallel()
	_, err := pager.NewSlackSender(pager.SlackConfig{Token: "xoxb-1"}, nil)
	require.ErrorContains(t, err, "Channel")
	_, err = pager.NewSlackSender(pager.SlackConfig{Token: "xoxb-1", Channel: "#c", WebhookURL: "http://x"}, nil)
	require.ErrorContains(t, err, "not both")
	s, err := pager.NewSlackSender(pager.SlackConfig{}, nil)
	require.NoError(t, err)
	require.Nil(t, s)
	_, err = pager.New(nil, pager.Config{Table: "alerts; DROP"}, pager.Deps{})
	require.ErrorContains(t, err, "Table")
}
