package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// The stand-ins the tests of this package put at the services' edges: a gateway in
// front of logistics and a Slack.

// gateway stands between finance and logistics and lets each test decide what a
// request gets: answer(w, r) writes an answer itself and returns true, or returns false
// to pass the request on to logistics. It counts the requests it saw by path suffix.
type gateway struct {
	URL      string
	target   atomic.Pointer[url.URL]
	single   atomic.Int64
	batches  atomic.Int64
	released chan struct{}
}

func newGateway(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, g *gateway) bool) *gateway {
	t.Helper()
	g := &gateway{released: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // read first, so a client hanging up cancels r.Context()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.HasSuffix(r.URL.Path, "/batch") {
			g.batches.Add(1)
		} else {
			g.single.Add(1)
		}
		if answer != nil && answer(w, r, g) {
			return
		}
		to := g.target.Load()
		if to == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(to).ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(g.released); srv.Close() })
	g.URL = srv.URL + "/webhooks/finance"
	return g
}

// to points the gateway at env's logistics.
func (g *gateway) to(t *testing.T, env *harness.Env) {
	t.Helper()
	u, err := url.Parse(env.Logistics.URL)
	require.NoError(t, err)
	g.target.Store(u)
}

// hang never answers (until the client gives up or the test ends).
func (g *gateway) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-g.released:
	}
}

// rejectCustomers is a gateway's answer that dead-letters at once (422) the events of
// the customers whose name starts with prefix, of the given types only when any are
// named, and passes everything else on to logistics. It has no batch endpoint (404),
// so finance sends it single requests.
func rejectCustomers(prefix string, types ...string) func(http.ResponseWriter, *http.Request, *gateway) bool {
	return func(w http.ResponseWriter, r *http.Request, _ *gateway) bool {
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r)
			return true
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var env struct {
			Type string `json:"type"`
			Data struct {
				CustomerID string `json:"customer_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &env)
		if !strings.HasPrefix(env.Data.CustomerID, prefix) || len(types) > 0 && !slices.Contains(types, env.Type) {
			return false
		}
		http.Error(w, `{"type":"invalid-event"}`, http.StatusUnprocessableEntity)
		return true
	}
}

// rejectIssued dead-letters the invoice.issued events of customers named skip-….
var rejectIssued = rejectCustomers("skip-", "invoice.issued")

// slackStandIn is a local Slack incoming webhook: it keeps every message, or answers
// 500, or never answers.
type slackStandIn struct {
	URL string

	mu       sync.Mutex
	received []slackMessage
}

// slackMessage is one message the stand-in received: its text and its Block Kit
// layout.
type slackMessage struct{ Text, Blocks string }

func newSlackStandIn(t *testing.T, mode string) *slackStandIn {
	t.Helper()
	s := &slackStandIn{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode {
		case "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		case "500":
			http.Error(w, "internal_error", http.StatusInternalServerError)
			return
		}
		var msg struct {
			Text   string
			Blocks json.RawMessage
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &msg)
		s.mu.Lock()
		s.received = append(s.received, slackMessage{msg.Text, string(msg.Blocks)})
		s.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	s.URL = srv.URL + "/services/T000/B000/XXXX"
	return s
}

// matching returns the messages whose text contains substr.
func (s *slackStandIn) matching(substr string) []slackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slackMessage
	for _, m := range s.received {
		if strings.Contains(m.Text, substr) {
			out = append(out, m)
		}
	}
	return out
}

// messages returns the texts of the messages whose text contains substr.
func (s *slackStandIn) messages(substr string) []string {
	var out []string
	for _, m := range s.matching(substr) {
		out = append(out, m.Text)
	}
	return out
}

var pagedCount = regexp.MustCompile(` — (\d+) in the last `)

// paged adds up the counts of the messages.
func paged(msgs []string) int {
	n := 0
	for _, m := range msgs {
		if c := pagedCount.FindStringSubmatch(m); c != nil {
			v, _ := strconv.Atoi(c[1])
			n += v
		}
	}
	return n
}

// pagingEnv starts a pair whose finance, configured with finance, pages slack and
// delivers through a gateway that dead-letters the events of customers named bad-… at
// once; the gateway passes the others on to logistics only once pointed at it (to).
func pagingEnv(t *testing.T, slack *slackStandIn, finance map[string]string) (*harness.Env, *gateway) {
	t.Helper()
	g := newGateway(t, rejectCustomers("bad-"))
	finance = maps.Clone(finance)
	finance["SLACK_WEBHOOK_URL"] = slack.URL
	return harness.New(t, harness.Options{LogisticsURL: g.URL, FinanceEnv: finance}), g
}
