package pager

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A page carries deep links resolved under the dashboard URL and the runbook section
// of its kind; a link that would leave the dashboard is dropped, and text from outside
// stays escaped in the blocks as in the plain text.
func TestBlocksLinkIntoTheDashboardOnly(t *testing.T) {
	t.Parallel()
	event := uuid.New()
	var got Subject
	p := &Pager{cfg: Config{Service: "finance", DashboardURL: "https://ops.example/ops",
		Runbooks: map[string]string{"dead_letter": "docs/operations.md § Event dead-lettered"},
		Links: func(s Subject) []Link {
			got = s
			return []Link{
				{"Event", "events/" + s.EventID.String()},
				{"Aggregate", "aggregates/" + s.Aggregate},
				{"Failed | list", "events?status=failed&aggregate=" + s.Aggregate},
				{"elsewhere", "https://evil.example/x"},
				{"protocol-relative", "//evil.example/x"},
				{"rooted", "/admin"},
				{"climbing", "../../admin"},
			}
		}}}
	m := p.message(due{Key: "k", Kind: "dead_letter", Title: "events dead-lettered", Count: 2},
		sample{EventID: event.String(), Aggregate: "agg-1", Error: "<!channel> HTTP 422"})
	require.Equal(t, Subject{Kind: "dead_letter", EventID: event, Aggregate: "agg-1"}, got)
	require.Equal(t, []Link{
		{"Event", "https://ops.example/ops/events/" + event.String()},
		{"Aggregate", "https://ops.example/ops/aggregates/agg-1"},
		{"Failed | list", "https://ops.example/ops/events?status=failed&aggregate=agg-1"},
	}, m.Links)
	require.Contains(t, m.Text, "\nEvent: https://ops.example/ops/events/"+event.String(),
		"the text, all a notification shows, carries the links too")
	require.Equal(t, "docs/operations.md § Event dead-lettered", m.Runbook)
	require.Contains(t, m.Text, "\nRunbook: docs/operations.md § Event dead-lettered\nDashboard: https://ops.example/ops")
	require.False(t, strings.ContainsAny(m.Text, "<>"), m.Text)

	raw, err := json.Marshal(blocks(m))
	require.NoError(t, err)
	var bs []struct {
		Type string `json:"type"`
		Text struct {
			Type, Text string
		} `json:"text"`
		Elements []struct{ Type, Text string } `json:"elements"`
	}
	require.NoError(t, json.Unmarshal(raw, &bs))
	require.Len(t, bs, 3)
	require.Equal(t, "section", bs[0].Type)
	require.Equal(t, m.Text, bs[0].Text.Text)
	require.Contains(t, bs[0].Text.Text, "&lt;!channel&gt; HTTP 422")
	require.Equal(t, "<https://ops.example/ops/events/"+event.String()+"|Event> · <https://ops.example/ops/aggregates/agg-1|Aggregate> · "+
		"<https://ops.example/ops/events?status=failed&amp;aggregate=agg-1|Failed / list>", bs[1].Text.Text)
	require.Equal(t, "context", bs[2].Type)
	require.Equal(t, "Runbook: docs/operations.md § Event dead-lettered", bs[2].Elements[0].Text)
}

// Without Links or a dashboard URL a page is its text alone, in one section.
func TestBlocksWithoutLinks(t *testing.T) {
	t.Parallel()
	p := &Pager{cfg: Config{Links: func(Subject) []Link { return []Link{{"Event", "events/x"}} }}}
	m := p.message(due{Key: "k", Kind: "pending_age", Title: "old", Count: 1}, sample{EventID: "not-a-uuid"})
	require.Empty(t, m.Links)
	require.Len(t, blocks(m), 1)
}
