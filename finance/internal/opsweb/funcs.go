package opsweb

import (
	"bytes"
	"encoding/json"
	"html/template"
	"time"

	"handoff/finance/internal/logisticsops"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
)

// funcs are the helpers the templates call; each returns text that html/template escapes.
var funcs = template.FuncMap{
	"ts":        timestamp,
	"tsp":       timestampPtr,
	"age":       func(d time.Duration) string { return d.Round(time.Second).String() },
	"ms":        func(d time.Duration) int64 { return d.Milliseconds() },
	"pretty":    prettyJSON,
	"eventPath": EventPath,
	"tracePath": TracePath,
	"retryable": func(ev outbox.StoredEvent) bool { return ev.Status != outbox.StatusDelivered && !ev.InFlight },
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
	// Processed is logistics' record of the event's key; nil when it has none.
	Processed *logisticsops.ProcessedEvent
}

func newTraceView(t ops.Trace) traceView {
	v := traceView{Trace: t, Rows: make([]traceRow, len(t.Events))}
	for i, ev := range t.Events {
		v.Rows[i] = traceRow{EventDetail: ev}
		if p, ok := t.Processed(ev.IdempotencyKey); ok {
			v.Rows[i].Processed = &p
		}
	}
	return v
}
