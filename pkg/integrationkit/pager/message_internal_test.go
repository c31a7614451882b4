package pager

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Text from outside (a receiver's answer, an error, an aggregate, an event id, a
// title or detail a service built from its data) reaches Slack as literal text: no
// mention, no labelled link, whatever it holds: the message keeps no < or > at all,
// and the dashboard URL is plain text the pager wrote.
func TestMessageEscapesOutsideText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   sample
		want string // in the message
	}{
		{"mention and labelled link in a receiver's answer",
			sample{Error: "rejected_by_receiver: HTTP 422 — <!channel> <http://evil.example|x>"},
			"last error: rejected_by_receiver: HTTP 422 — &lt;!channel&gt; &lt;http://evil.example|x&gt;"},
		{"here and a user", sample{Error: "<!here> ping <@U024BE7LH>"}, "&lt;!here&gt; ping &lt;@U024BE7LH&gt;"},
		{"user group and date markup in an aggregate", sample{Aggregate: "<!subteam^S1|ops> <!date^1^{date}|x>"},
			"invoice &lt;!subteam^S1|ops&gt; &lt;!date^1^{date}|x&gt;"},
		{"an event id", sample{EventID: "<#C024BE7LR>"}, "e.g. event &lt;#C024BE7LR&gt;"},
		{"text already escaped stays as written", sample{Detail: "a &lt;b&gt; &amp; c"}, "\na &amp;lt;b&amp;gt; &amp;amp; c"},
		{"a bare ampersand", sample{Error: "x & y"}, "last error: x &amp; y"},
		{"nothing to escape", sample{EventID: "ev-1", Aggregate: "inv-1", Error: "HTTP 500"},
			"e.g. event ev-1, invoice inv-1, last error: HTTP 500"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := &Pager{cfg: Config{Service: "finance", AggregateLabel: "invoice", DashboardURL: "https://ops.example/ops/?a=1&b=2"}}
			m := p.message(due{Key: "k", Kind: "dead_letter", Title: "events <!channel> dead-lettered", Count: 1}, c.in)
			require.Contains(t, m.Text, c.want)
			require.False(t, strings.ContainsAny(m.Text, "<>"), "no markup but the pager's own: %q", m.Text)
			require.True(t, strings.HasPrefix(m.Text, "*[finance]* events &lt;!channel&gt; dead-lettered — 1 in the last 1s"), m.Text)
			require.True(t, strings.HasSuffix(m.Text, "\nDashboard: https://ops.example/ops/?a=1&amp;b=2"), m.Text)
		})
	}
}
