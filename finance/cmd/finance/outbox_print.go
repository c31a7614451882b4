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
	row(tw, "oldest pending", st.OldestPendingAge.Round(time.Second).String())
	row(tw, "as of", stamp(st.Now))
	for _, c := range ov.Circuits {
		row(tw, "circuit", clean(c.Destination, 0), c.State, strconv.Itoa(c.Failures)+" failures", "open until "+stampPtr(c.OpenUntil))
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

func printEvent(w io.Writer, d outbox.EventDetail) {
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
	row(tw, "last error", lastError(d.StoredEvent))
	row(tw, "failed because", clean(d.FailedReason, 0))
	if d.InFlight {
		row(tw, "in flight", "leased by "+clean(d.LeaseOwner, 0)+" until "+stampPtr(d.LeaseExpiresAt))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	printAttempts(w, "", d.AttemptLog)
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
