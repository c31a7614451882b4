package pager

import (
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/slack-go/slack"
)

// Subject is what a page is about, as links to a dashboard need it: the alert's kind
// and its latest occurrence's event (uuid.Nil when none) and aggregate.
type Subject struct {
	Kind      string
	EventID   uuid.UUID
	Aggregate string
}

// Link is one deep link of a page: a label and a path relative to
// Config.DashboardURL ("events/…", "events?status=failed").
type Link struct {
	Label string
	Path  string
}

// links resolves the configured links of s against the dashboard URL. A link is kept
// only when it stays under the dashboard's own origin and path, so whatever a path
// holds, a page can only ever point into the dashboard.
func (p *Pager) links(s Subject) []Link {
	if p.cfg.Links == nil || p.cfg.DashboardURL == "" {
		return nil
	}
	base, err := url.Parse(p.cfg.DashboardURL)
	if err != nil || base.Host == "" {
		return nil
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	base.RawQuery, base.Fragment = "", ""
	root := base.String()
	var out []Link
	for _, l := range p.cfg.Links(s) {
		rel, err := url.Parse(l.Path)
		if err != nil || rel.IsAbs() || rel.Host != "" || strings.HasPrefix(l.Path, "/") {
			continue
		}
		abs := base.ResolveReference(rel).String()
		if !strings.HasPrefix(abs, root) {
			continue
		}
		out = append(out, Link{Label: l.Label, Path: abs})
	}
	return out
}

// maxSectionText is Slack's limit on a section block's text.
const maxSectionText = 3000

// blocks lays m out in Block Kit: the text, a line of links into the dashboard and
// the runbook section. Text carries no markup but the pager's own (see Message.Text);
// a link's label is the pager's configuration and its URL one that links resolved,
// written with &, < and > escaped and | encoded, so neither can end the link early.
func blocks(m Message) []slack.Block {
	out := []slack.Block{slack.NewSectionBlock(
		slack.NewTextBlockObject(slack.MarkdownType, truncate(m.Text, maxSectionText), false, false), nil, nil)}
	if len(m.Links) > 0 {
		parts := make([]string, len(m.Links))
		for i, l := range m.Links {
			parts[i] = "<" + mrkdwn(strings.ReplaceAll(l.Path, "|", "%7C")) + "|" + mrkdwn(strings.NewReplacer("|", "/").Replace(l.Label)) + ">"
		}
		out = append(out, slack.NewSectionBlock(
			slack.NewTextBlockObject(slack.MarkdownType, strings.Join(parts, " · "), false, false), nil, nil))
	}
	if m.Runbook != "" {
		out = append(out, slack.NewContextBlock("",
			slack.NewTextBlockObject(slack.MarkdownType, "Runbook: "+mrkdwn(m.Runbook), false, false)))
	}
	return out
}
