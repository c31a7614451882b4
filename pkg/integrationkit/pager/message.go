package pager

import (
	"fmt"
	"strings"
	"time"
)

// Message is one page: the aggregated occurrences of one alert key.
type Message struct {
	Key   string
	Kind  string
	Count int64
	// Text is the whole message, Slack mrkdwn.
	Text string
}

// message renders a claimed alert: what, how many in which window, the latest
// occurrence as an example, and the dashboard link.
func (p *Pager) message(d due, s sample) Message {
	var b strings.Builder
	window := max(time.Duration(d.WindowSecs*float64(time.Second)).Round(time.Second), time.Second)
	if p.cfg.Service != "" {
		fmt.Fprintf(&b, "*[%s]* ", p.cfg.Service)
	}
	fmt.Fprintf(&b, "%s — %d in the last %s", d.Title, d.Count, window)
	if d.Total > d.Count {
		fmt.Fprintf(&b, " (%d since first seen)", d.Total)
	}
	var eg []string
	if s.EventID != "" {
		eg = append(eg, "event "+s.EventID)
	}
	if s.Aggregate != "" {
		eg = append(eg, p.cfg.AggregateLabel+" "+s.Aggregate)
	}
	if s.Error != "" {
		eg = append(eg, "last error: "+s.Error)
	}
	if len(eg) > 0 {
		b.WriteString("\ne.g. " + strings.Join(eg, ", "))
	}
	if s.Detail != "" {
		b.WriteString("\n" + s.Detail)
	}
	if p.cfg.DashboardURL != "" {
		b.WriteString("\nDashboard: " + p.cfg.DashboardURL)
	}
	return Message{Key: d.Key, Kind: d.Kind, Count: d.Count, Text: b.String()}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
