package pager_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/egress/egresstest"
	"handoff/pkg/integrationkit/pager"
)

// loopback is the guard of the tests' Slack stand-ins, which listen on 127.0.0.1.
func loopback(t *testing.T) *egress.Dialer {
	t.Helper()
	return egresstest.Guard(t, "127.0.0.1/32")
}

// targets are a webhook and a bot token pointed at base, as SlackConfigs.
func targets(base string) map[string]pager.SlackConfig {
	return map[string]pager.SlackConfig{
		"webhook": {WebhookURL: base + "/services/T0/B0/X"},
		"bot":     {Token: "xoxb-test", Channel: "#oncall", APIURL: base + "/api/"},
	}
}

func send(t *testing.T, c pager.SlackConfig, text string) error {
	t.Helper()
	s, err := pager.NewSlackSender(c, loopback(t))
	require.NoError(t, err)
	return s.Send(context.Background(), pager.Message{Key: "k", Kind: "dead_letter", Count: 1, Text: text})
}

// Both senders post through the guard: a Slack URL on an address it refuses is never
// dialed, and the Send fails with the refusal.
func TestSlackSendersNeverDialARefusedAddress(t *testing.T) {
	t.Parallel()
	trap := egresstest.Listen(t, "127.0.0.2:0")
	for name, c := range targets(trap.URL()) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			egresstest.RequireBlocked(t, send(t, c, "x"), "loopback")
		})
	}
	t.Cleanup(func() { require.Zero(t, trap.Accepted(), "nothing reached 127.0.0.2") })
}

// A Slack endpoint answering 307 is not followed: where it points hears nothing, and
// the Send fails so that the pager keeps the message.
func TestSlackSendersNeverFollowRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	for name, c := range targets(redirecting.URL) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, send(t, c, "x"))
		})
	}
	t.Cleanup(func() { require.Zero(t, elsewhere.Load(), "the redirect was not followed") })
}

// Both senders post the text as the pager wrote it, as the plain fallback and as the
// first Block Kit section, with link and media previews off, so Slack fetches nothing
// a message names.
func TestSlackSendersTurnPreviewsOff(t *testing.T) {
	t.Parallel()
	type posted struct {
		text, unfurlLinks, unfurlMedia, block string
	}
	type section struct {
		Text struct{ Text string } `json:"text"`
	}
	first := func(raw string) string {
		var bs []section
		if json.Unmarshal([]byte(raw), &bs) != nil || len(bs) == 0 {
			return ""
		}
		return bs[0].Text.Text
	}
	got := make(chan posted, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") == "application/json" {
			var m struct {
				Text        string          `json:"text"`
				UnfurlLinks *bool           `json:"unfurl_links"`
				UnfurlMedia *bool           `json:"unfurl_media"`
				Blocks      json.RawMessage `json:"blocks"`
			}
			_ = json.Unmarshal(body, &m)
			got <- posted{m.Text, strconv.FormatBool(m.UnfurlLinks != nil && *m.UnfurlLinks),
				strconv.FormatBool(m.UnfurlMedia != nil && *m.UnfurlMedia), first(string(m.Blocks))}
			_, _ = io.WriteString(w, "ok")
			return
		}
		form, _ := url.ParseQuery(string(body))
		got <- posted{form.Get("text"), form.Get("unfurl_links"), form.Get("unfurl_media"), first(form.Get("blocks"))}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1.000001"}`)
	}))
	t.Cleanup(srv.Close)
	const text = "*[finance]* x &lt;!channel&gt; — see http://ops.example/ops/"
	for name, c := range targets(srv.URL) {
		require.NoError(t, send(t, c, text), name)
		require.Equal(t, posted{text, "false", "false", text}, <-got, name)
	}
}
