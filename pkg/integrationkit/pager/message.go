package pager

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/slack-go/slack/slackutilsx"
)

// Message is one page: the aggregated occurrences of one alert key.
type Message struct {
	Key   string
	Kind  string
	Count int64
	// Text is the whole message, Slack mrkdwn. Every piece of it the pager did not
	// write itself (the alert's title, event, aggregate, error and detail, the
	// configured names and the dashboard URL) has &, < and > escaped, so none of it
	// can mention anyone (<!channel>, <!here>, <@U…>) or become a link with a label
	// of its choosing (<http://…|…>). The pager's own markup is the bold service name.
	// It is the whole message for a notification or a client without Block Kit.
	Text string
	// Links are absolute URLs into the dashboard (Config.Links resolved against
	// Config.DashboardURL), shown as links in the Block Kit layout.
	Links []Link
	// Runbook names the runbook section for the alert's kind (Config.Runbooks).
	Runbook string
}

// message renders a claimed alert: what, how many in which window, the latest
// occurrence as an example, the runbook section, the dashboard link, and the deep
// links into the dashboard (in the text as well as the blocks).
func (p *Pager) message(d due, s sample) Message {
	var b strings.Builder
	window := max(time.Duration(d.WindowSecs*float64(time.Second)).Round(time.Second), time.Second)
	if p.cfg.Service != "" {
		fmt.Fprintf(&b, "*[%s]* ", mrkdwn(p.cfg.Service))
	}
	fmt.Fprintf(&b, "%s — %d in the last %s", mrkdwn(d.Title), d.Count, window)
	if d.Total > d.Count {
		fmt.Fprintf(&b, " (%d since first seen)", d.Total)
	}
	var eg []string
	if s.EventID != "" {
		eg = append(eg, "event "+mrkdwn(s.EventID))
	}
	if s.Aggregate != "" {
		eg = append(eg, mrkdwn(p.cfg.AggregateLabel)+" "+mrkdwn(s.Aggregate))
	}
	if s.Error != "" {
		eg = append(eg, "last error: "+mrkdwn(s.Error))
	}
	if len(eg) > 0 {
		b.WriteString("\ne.g. " + strings.Join(eg, ", "))
	}
	if s.Detail != "" {
		b.WriteString("\n" + mrkdwn(s.Detail))
	}
	runbook := p.cfg.Runbooks[d.Kind]
	if runbook != "" {
		b.WriteString("\nRunbook: " + mrkdwn(runbook))
	}
	if p.cfg.DashboardURL != "" {
		b.WriteString("\nDashboard: " + mrkdwn(p.cfg.DashboardURL))
	}
	subject := Subject{Kind: d.Kind, Aggregate: s.Aggregate}
	if id, err := uuid.Parse(s.EventID); err == nil {
		subject.EventID = id
	}
	links := p.links(subject)
	// The deep links in the plain text too: a notification, or a client without Block
	// Kit, shows only the text.
	for _, l := range links {
		b.WriteString("\n" + mrkdwn(l.Label) + ": " + mrkdwn(l.Path))
	}
	return Message{Key: d.Key, Kind: d.Kind, Count: d.Count, Text: b.String(), Links: links, Runbook: runbook}
}

// mrkdwn is s as literal text in Slack mrkdwn: &, < and > escaped, the only
// characters Slack reads as control characters there.
func mrkdwn(s string) string { return slackutilsx.EscapeMessage(s) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
