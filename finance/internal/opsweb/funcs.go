package opsweb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
)

// funcs are the helpers the templates call; each returns text that html/template escapes.
var funcs = template.FuncMap{
	"ts":              timestamp,
	"tsp":             timestampPtr,
	"iso":             func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"ago":             func(t time.Time) string { return relative(t, time.Now()) },
	"age":             func(d time.Duration) string { return d.Round(time.Second).String() },
	"ms":              func(d time.Duration) int64 { return d.Milliseconds() },
	"pretty":          prettyJSON,
	"eventPath":       EventPath,
	"tracePath":       TracePath,
	"eventsFor":       func(key string) string { return EventsPath(url.Values{"invoice": {key}}) },
	"destinationPath": DestinationPath,
	"filterText":      filterText,
}

// filterText shows how an action by filter selected its events.
func filterText(f audit.Filter) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("status", f.Status)
	add("type", f.Type)
	add("invoice", f.InvoiceID)
	if f.From != nil {
		add("from", timestamp(*f.From))
	}
	if f.To != nil {
		add("to", timestamp(*f.To))
	}
	if f.Limit > 0 {
		add("limit", strconv.Itoa(f.Limit))
	}
	add("destination", f.Destination)
	return strings.Join(parts, " ")
}

// relative says how far t is from now for a person: "just now", "3 min ago", "in
// 20 s". Shown with the absolute time beside it (the time template's title), so the
// few seconds between this server's clock and the database's do not mislead.
func relative(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	past := d >= 0
	d = d.Abs()
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
	if past {
		return s + " ago"
	}
	return "in " + s
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func timestampPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return timestamp(*t)
}

// prettyJSON indents a payload for reading; a payload that is not JSON is shown as it is.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// traceView pairs each event of a trace with logistics' record of its key.
type traceView struct {
	ops.Trace
	Rows []traceRow
}

type traceRow struct {
	outbox.EventDetail
	// Processed is logistics' record of the event's key; nil when it has none, or
	// when logistics could not be asked (Trace.Logistics is nil).
	Processed *logisticsclient.ProcessedEvent
	// WaitingFor is the failed earlier event holding this pending one back.
	WaitingFor *outbox.StoredEvent
	// Actions are the operator actions that changed the event, oldest first.
	Actions []audit.Entry
}

// CanRetry reports whether a Retry would do something now (see eventRow.CanRetry).
func (r traceRow) CanRetry() bool {
	return (r.Status == outbox.StatusPending || r.Status == outbox.StatusFailed) && !r.InFlight && r.WaitingFor == nil
}

// CanSkip reports whether a Skip would do something now (see eventRow.CanSkip).
func (r traceRow) CanSkip() bool {
	return r.Status == outbox.StatusFailed && !r.InFlight
}

func newTraceView(t ops.Trace) traceView {
	v := traceView{Trace: t, Rows: make([]traceRow, len(t.Events))}
	var head *outbox.StoredEvent // the invoice's first failed event
	for i, ev := range t.Events {
		v.Rows[i] = traceRow{EventDetail: ev, Actions: t.Actions[ev.ID]}
		if p, ok := t.Processed(ev.IdempotencyKey); ok {
			v.Rows[i].Processed = &p
		}
		if ev.Status == outbox.StatusPending {
			v.Rows[i].WaitingFor = head
		}
		if ev.Status == outbox.StatusFailed && head == nil {
			head = &t.Events[i].StoredEvent
		}
	}
	return v
}
