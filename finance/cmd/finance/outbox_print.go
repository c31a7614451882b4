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
	"handoff/finance/internal/insight"
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

// ago says how long d is for a person: "12s", "4m10s", "3h05m", "2d4h".
func ago(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

// printStats writes the overview, each count with what it counts.
func printStats(w io.Writer, ov ops.Overview) {
	st := ov.Stats
	tw := newTable(w)
	pending := "(none)"
	if st.Pending > 0 {
		pending = fmt.Sprintf("(due now %d, in flight %d, oldest %s ago)", st.Due, st.InFlight, ago(st.OldestPendingAge))
	}
	row(tw, "pending", strconv.FormatInt(st.Pending, 10), pending)
	row(tw, "failed", strconv.FormatInt(st.Failed, 10), "(dead letters: retry or skip them)")
	row(tw, "delivered", strconv.FormatInt(st.Delivered, 10), "(still in the outbox; retention archives them)")
	row(tw, "skipped", strconv.FormatInt(st.Skipped, 10), "(dead letters an operator gave up)")
	row(tw, "as of", stamp(st.Now))
	row(tw, "reconciliation", reconciliationLine(ov))
	_ = tw.Flush()
	tw = newTable(w) // the circuits' columns apart from the counts'
	for _, c := range ov.Circuits {
		state := string(c.State)
		switch {
		case c.OpenUntil != nil && c.OpenUntil.After(st.Now):
			state += " until " + stamp(*c.OpenUntil)
		case c.OpenUntil != nil:
			state += " (cool-down over since " + stamp(*c.OpenUntil) + ": the next request probes)"
		}
		cells := []string{"circuit", clean(c.Destination, 0), state, strconv.Itoa(c.Failures) + " failures in a row"}
		if c.PausedAt != nil {
			cells = append(cells, "PAUSED since "+stamp(*c.PausedAt))
		}
		row(tw, cells...)
	}
	_ = tw.Flush()
}

// reconciliationLine says what the latest reconciliation found, or why there is none.
func reconciliationLine(ov ops.Overview) string {
	r := ov.Reconciliation
	if r == nil {
		return ov.ReconciliationNote
	}
	window := fmt.Sprintf("of %s – %s, finished %s", stamp(r.From), stamp(r.To), stamp(r.FinishedAt))
	switch {
	case r.Error != "":
		return "could not run (" + window + "): " + clean(r.Error, 0)
	case r.Clean():
		return "clean (" + window + ")"
	}
	return fmt.Sprintf("%d discrepancies (%s): %d delivered but never applied, %d applied but unknown, %d pending far past schedule",
		r.MissingCount+r.UnknownCount+r.OverdueCount, window, r.MissingCount, r.UnknownCount, r.OverdueCount)
}

// status says an event's status with what holds it: a dispatcher sending it, a failed
// earlier event of its invoice, or its destination's circuit or pause.
func status(r insight.Row) string {
	s := r.Status
	switch {
	case r.InFlight:
		s += ", in flight"
	case r.WaitingFor != nil:
		s += fmt.Sprintf(", waiting for %s #%d (failed)", clean(r.WaitingFor.EventType, 40), r.WaitingFor.Sequence)
	case r.Status == outbox.StatusPending && r.DeferredAt != nil:
		s += ", " + deferral(r.DeferredBy)
	}
	return s
}

// deferral says what deferred a pending event without a request.
func deferral(by string) string {
	switch by {
	case outbox.DeferredByCircuit:
		return "held by its destination's open circuit"
	case outbox.DeferredByPause:
		return "held: its destination is paused"
	}
	return "deferred by " + clean(by, 40)
}

func printEvents(w io.Writer, rows []insight.Row, next *outbox.Cursor) {
	tw := newTable(w)
	row(tw, "ID", "CREATED", "TYPE", "INVOICE", "SEQ", "STATUS", "ATTEMPTS", "LAST ERROR")
	for _, r := range rows {
		row(tw, r.ID.String(), stamp(r.CreatedAt), clean(r.EventType, 40), clean(r.Invoice, 40),
			strconv.FormatInt(r.Sequence, 10), status(r), fmt.Sprintf("%d/%d", r.Attempts, r.Requests), lastError(r.StoredEvent))
	}
	_ = tw.Flush()
	if len(rows) == 0 {
		fmt.Fprintln(w, "no event matches")
	}
	if next != nil {
		fmt.Fprintf(w, "more: add --cursor=%s\n", next)
	}
}

func printEvent(w io.Writer, r insight.Row, d outbox.EventDetail, actions []audit.Entry) {
	tw := newTable(w)
	row(tw, "event", d.ID.String())
	row(tw, "type", clean(d.EventType, 0))
	invoice := clean(d.AggregateKey, 0)
	if r.Invoice != d.AggregateKey {
		invoice = clean(r.Invoice, 0) + " (" + invoice + ")"
	}
	row(tw, "invoice", invoice+", event "+strconv.FormatInt(d.Sequence, 10)+" of the invoice")
	row(tw, "idempotency key", clean(d.IdempotencyKey, 0))
	row(tw, "destination", clean(d.Destination, 0))
	row(tw, "correlation id", clean(d.CorrelationID, 0))
	row(tw, "status", d.Status)
	if b := r.WaitingFor; b != nil {
		row(tw, "waiting for", fmt.Sprintf("%s (%s, event %d of the invoice) (failed): an invoice's events go in order; "+
			"fix and retry or skip that one, retrying this one changes nothing", b.ID, clean(b.EventType, 0), b.Sequence))
	}
	if d.Status == outbox.StatusPending && d.DeferredAt != nil {
		row(tw, "deferred", deferral(d.DeferredBy)+" since "+stampPtr(d.DeferredAt)+"; the last error below is the real one")
	}
	row(tw, "attempts", fmt.Sprintf("%d counted against the budget, %d requests sent in all", d.Attempts, d.Requests))
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

func printTrace(w io.Writer, t ops.Trace, rows []insight.Row) {
	inv := t.Invoice
	fmt.Fprintf(w, "invoice %s  %s  status %s  customer %s  %d of %d %s paid\n\n",
		inv.Number, inv.ID, inv.Status, clean(inv.CustomerID, 0), inv.PaidMinor, inv.TotalMinor, inv.Currency)
	fmt.Fprintln(w, "finance events:")
	if len(t.Events) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for i, ev := range t.Events {
		fmt.Fprintf(w, "  %d. %s  %s  %s  key %s\n", ev.Sequence, clean(ev.EventType, 0), status(rows[i]), ev.ID, clean(ev.IdempotencyKey, 0))
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
