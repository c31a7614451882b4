package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
)

// The outbox commands' output: aligned tables for a terminal. Every value that came
// from outside (errors, response bodies, payloads) goes through clean first, so a
// receiver cannot put terminal escapes on an operator's screen.

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// row writes one tab-separated line of cells.
func row(w io.Writer, cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")) }

// clean replaces control characters with spaces and cuts s to max runes (0: no cut).
func clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); max > 0 && len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func stampPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return stamp(*t)
}

func lastError(ev outbox.StoredEvent) string { return clean(ev.LastFailure(), 70) }

func printStats(w io.Writer, ov ops.Overview) {
	st := ov.Stats
	tw := newTable(w)
	row(tw, "pending", strconv.FormatInt(st.Pending, 10))
	row(tw, "in flight", strconv.FormatInt(st.InFlight, 10))
	row(tw, "failed", strconv.FormatInt(st.Failed, 10))
	row(tw, "delivered", strconv.FormatInt(st.Delivered, 10))
	row(tw, "skipped", strconv.FormatInt(st.Skipped, 10))
	row(tw, "oldest pending", st.OldestPendingAge.Round(time.Second).String())
	row(tw, "as of", stamp(st.Now))
	for _, c := range ov.Circuits {
		cells := []string{"circuit", clean(c.Destination, 0), c.State, strconv.Itoa(c.Failures) + " failures",
			"open until " + stampPtr(c.OpenUntil)}
		if c.PausedAt != nil {
			cells = append(cells, "PAUSED since "+stamp(*c.PausedAt))
		}
		row(tw, cells...)
	}
	_ = tw.Flush()
}

func printEvents(w io.Writer, page outbox.EventPage) {
	tw := newTable(w)
	row(tw, "ID", "CREATED", "TYPE", "INVOICE", "SEQ", "STATUS", "ATTEMPTS", "LAST ERROR")
	for _, ev := range page.Items {
		status := ev.Status
		if ev.InFlight {
			status += " (in flight)"
		}
		row(tw, ev.ID.String(), stamp(ev.CreatedAt), clean(ev.EventType, 40), clean(ev.AggregateKey, 40),
			strconv.FormatInt(ev.Sequence, 10), status, fmt.Sprintf("%d/%d", ev.Attempts, ev.Requests), lastError(ev))
	}
	_ = tw.Flush()
	if len(page.Items) == 0 {
		fmt.Fprintln(w, "no event matches")
	}
	if page.Next != nil {
		fmt.Fprintf(w, "more: add --cursor=%s\n", page.Next)
	}
}

func printEvent(w io.Writer, d outbox.EventDetail, actions []audit.Entry) {
	tw := newTable(w)
	row(tw, "event", d.ID.String())
	row(tw, "type", clean(d.EventType, 0))
	row(tw, "invoice", clean(d.AggregateKey, 0)+" (event "+strconv.FormatInt(d.Sequence, 10)+")")
	row(tw, "idempotency key", clean(d.IdempotencyKey, 0))
	row(tw, "destination", clean(d.Destination, 0))
	row(tw, "correlation id", clean(d.CorrelationID, 0))
	row(tw, "status", d.Status)
	row(tw, "attempts", fmt.Sprintf("%d counted, %d requests sent", d.Attempts, d.Requests))
	row(tw, "created", stamp(d.CreatedAt))
	row(tw, "last attempt", stampPtr(d.LastAttemptAt))
	row(tw, "next attempt", stamp(d.NextAttemptAt))
	row(tw, "delivered", stampPtr(d.DeliveredAt))
	if d.SkippedAt != nil {
		row(tw, "skipped", stampPtr(d.SkippedAt))
	}
	row(tw, "last error", lastError(d.StoredEvent))
	row(tw, "failed because", clean(d.FailedReason, 0))
	if d.InFlight {
		row(tw, "in flight", "leased by "+clean(d.LeaseOwner, 0)+" until "+stampPtr(d.LeaseExpiresAt))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	printAttempts(w, "", d.AttemptLog)
	fmt.Fprintln(w, "\noperator actions:")
	printActions(w, "  ", actions)
	fmt.Fprintln(w, "\npayload:")
	for line := range strings.Lines(prettyJSON(d.Payload)) {
		fmt.Fprintln(w, clean(strings.TrimSuffix(line, "\n"), 0))
	}
}

// printAttempts lists attempts, each line indented by indent.
func printAttempts(w io.Writer, indent string, log []outbox.Attempt) {
	if len(log) == 0 {
		fmt.Fprintln(w, indent+"no request sent yet")
		return
	}
	tw := newTable(w)
	row(tw, indent+"#", "STARTED", "TOOK", "ANSWER", "OUTCOME", "RESPONSE")
	for _, a := range log {
		row(tw, indent+strconv.Itoa(a.No), stamp(a.StartedAt), strconv.FormatInt(a.Duration.Milliseconds(), 10)+" ms",
			clean(a.Answer(), 60), a.Outcome, clean(a.ResponseSnippet, 60))
	}
	_ = tw.Flush()
}

// printActions lists operator actions on one event, oldest first, each line indented
// by indent.
func printActions(w io.Writer, indent string, actions []audit.Entry) {
	if len(actions) == 0 {
		fmt.Fprintln(w, indent+"none")
		return
	}
	tw := newTable(w)
	row(tw, indent+"AT", "ACTOR", "ACTION", "EVENTS", "REASON")
	for _, a := range actions {
		row(tw, indent+stamp(a.At), clean(a.Actor, 40), a.Action, strconv.Itoa(a.Count), clean(a.Reason, 0))
	}
	_ = tw.Flush()
}

// printAuditPage lists a page of the audit log, newest first, with what each action
// acted on: an event, a filter or a destination.
func printAuditPage(w io.Writer, page audit.Page) {
	tw := newTable(w)
	row(tw, "AT", "ACTOR", "ACTION", "EVENTS", "ON", "REASON")
	for _, a := range page.Items {
		row(tw, stamp(a.At), clean(a.Actor, 40), a.Action, strconv.Itoa(a.Count), clean(actedOn(a), 0), clean(a.Reason, 0))
	}
	_ = tw.Flush()
	if len(page.Items) == 0 {
		fmt.Fprintln(w, "no action recorded")
	}
	if page.Next != nil {
		fmt.Fprintf(w, "more: add --cursor=%s\n", page.Next)
	}
}

// actedOn says what an action acted on, for a table cell.
func actedOn(a audit.Entry) string {
	var parts []string
	if a.EventID != nil {
		parts = append(parts, "event "+a.EventID.String())
	}
	if f := a.Filter; f != nil {
		for _, kv := range [][2]string{{"status", f.Status}, {"type", f.Type}, {"invoice", f.InvoiceID},
			{"from", stampPtr(f.From)}, {"to", stampPtr(f.To)}, {"destination", f.Destination}} {
			if kv[1] != "" && kv[1] != "—" {
				parts = append(parts, kv[0]+"="+kv[1])
			}
		}
		if f.Limit > 0 {
			parts = append(parts, "limit="+strconv.Itoa(f.Limit))
		}
	}
	if a.Destination != "" {
		parts = append(parts, "→ "+a.Destination)
	}
	return strings.Join(parts, " ")
}

// prettyJSON indents a payload; one that is not JSON is shown as it is.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func printTrace(w io.Writer, t ops.Trace) {
	inv := t.Invoice
	fmt.Fprintf(w, "invoice %s  %s  status %s  customer %s  %d of %d %s paid\n\n",
		inv.Number, inv.ID, inv.Status, clean(inv.CustomerID, 0), inv.PaidMinor, inv.TotalMinor, inv.Currency)
	fmt.Fprintln(w, "finance events:")
	if len(t.Events) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, ev := range t.Events {
		fmt.Fprintf(w, "  %d. %s  %s  %s  key %s\n", ev.Sequence, clean(ev.EventType, 0), ev.Status, ev.ID, clean(ev.IdempotencyKey, 0))
		if ev.FailedReason != "" {
			fmt.Fprintf(w, "     failed because: %s\n", clean(ev.FailedReason, 0))
		}
		printAttempts(w, "     ", ev.AttemptLog)
		if actions := t.Actions[ev.ID]; len(actions) > 0 {
			fmt.Fprintln(w, "     operator actions:")
			printActions(w, "     ", actions)
		}
		if p, ok := t.Processed(ev.IdempotencyKey); ok {
			fmt.Fprintf(w, "     logistics: processed %s, result %s\n", stamp(p.ReceivedAt), clean(p.Result, 0))
		} else if t.Logistics != nil {
			fmt.Fprintln(w, "     logistics: no record of this key")
		}
	}
	fmt.Fprintln(w, "\nlogistics:")
	switch {
	case t.Logistics == nil:
		fmt.Fprintln(w, "  "+t.LogisticsNote)
	case t.Logistics.Shipment == nil:
		fmt.Fprintln(w, "  no shipment for this invoice")
	default:
		s := t.Logistics.Shipment
		fmt.Fprintf(w, "  shipment %s  state %s  version %d\n", s.ID, clean(s.State, 0), s.Version)
		for _, h := range s.History {
			from := h.From
			if from == "" {
				from = "—"
			}
			fmt.Fprintf(w, "    %s  %s → %s  (%s)\n", stamp(h.At), clean(from, 0), clean(h.To, 0), clean(h.Cause, 0))
		}
	}
}
