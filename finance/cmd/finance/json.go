package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/insight"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/opsapi"
	"handoff/finance/internal/reconcile"
	"handoff/pkg/integrationkit/outbox"
)

// The documents --json prints, one per command: what the text says, with field names
// in snake_case, times in RFC 3339 (UTC), and null for a time or an object that is
// absent (an audit entry leaves out a filter and a destination it has not, as the API
// does). Where the ops API answers the same question the command prints the API's
// document (package opsapi's exported ones), with what the command says besides, so a
// script reads either alike.

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// statsDoc is the ops API's stats with how many of the pending are due now, and a
// reconciliation that says whether it was clean.
type statsDoc struct {
	opsapi.Stats
	// DueNow is among the pending.
	DueNow int64 `json:"due_now"`
	// Reconciliation stands for the API's, which does not say clean.
	Reconciliation *reconciliationDoc `json:"reconciliation"`
}

// reconciliationDoc is the latest reconciliation in the stats: the keys of each kind
// of discrepancy, perhaps cut short; the counts are complete.
type reconciliationDoc struct {
	opsapi.Reconciliation
	Clean bool `json:"clean"`
}

func newStatsDoc(ov ops.Overview) statsDoc {
	d := statsDoc{Stats: opsapi.NewStats(ov), DueNow: ov.Stats.Due}
	if r := d.Stats.Reconciliation; r != nil {
		d.Reconciliation = &reconciliationDoc{Reconciliation: *r, Clean: ov.Reconciliation.Clean()}
	}
	return d
}

type eventDoc struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	IdempotencyKey string `json:"idempotency_key"`
	// InvoiceID is the event's aggregate key, the invoice's id.
	InvoiceID string `json:"invoice_id"`
	// InvoiceNumber is null when no invoice has the id.
	InvoiceNumber  *string    `json:"invoice_number"`
	Sequence       int64      `json:"sequence"`
	Destination    string     `json:"destination"`
	CorrelationID  string     `json:"correlation_id"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	Requests       int        `json:"requests"`
	InFlight       bool       `json:"in_flight"`
	LeaseOwner     string     `json:"lease_owner"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	LastError      string     `json:"last_error"`
	LastStatusCode int        `json:"last_status_code"`
	FailedReason   string     `json:"failed_reason"`
	CreatedAt      time.Time  `json:"created_at"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	NextAttemptAt  time.Time  `json:"next_attempt_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
	SkippedAt      *time.Time `json:"skipped_at"`
	DeferredAt     *time.Time `json:"deferred_at"`
	DeferredBy     string     `json:"deferred_by"`
	// WaitingFor is the failed earlier event of the invoice holding this pending one
	// back; null when none.
	WaitingFor *waitingDoc `json:"waiting_for"`
}

type waitingDoc struct {
	ID       uuid.UUID `json:"id"`
	Type     string    `json:"type"`
	Sequence int64     `json:"sequence"`
	Status   string    `json:"status"`
}

func newEventDoc(r insight.Row) eventDoc {
	ev := r.StoredEvent
	d := eventDoc{ID: ev.ID.String(), Type: ev.EventType, IdempotencyKey: ev.IdempotencyKey, InvoiceID: ev.AggregateKey,
		Sequence: ev.Sequence, Destination: ev.Destination, CorrelationID: ev.CorrelationID, Status: ev.Status,
		Attempts: ev.Attempts, Requests: ev.Requests, InFlight: ev.InFlight, LastError: ev.LastError,
		LastStatusCode: ev.LastStatusCode, FailedReason: ev.FailedReason, CreatedAt: ev.CreatedAt.UTC(),
		LastAttemptAt: utc(ev.LastAttemptAt), NextAttemptAt: ev.NextAttemptAt.UTC(), DeliveredAt: utc(ev.DeliveredAt),
		SkippedAt: utc(ev.SkippedAt), DeferredAt: utc(ev.DeferredAt), DeferredBy: ev.DeferredBy}
	if r.Invoice != ev.AggregateKey {
		d.InvoiceNumber = &r.Invoice
	}
	if ev.InFlight {
		d.LeaseOwner, d.LeaseExpiresAt = ev.LeaseOwner, utc(ev.LeaseExpiresAt)
	}
	if b := r.WaitingFor; b != nil {
		d.WaitingFor = &waitingDoc{ID: b.ID, Type: b.EventType, Sequence: b.Sequence, Status: outbox.StatusFailed}
	}
	return d
}

type listDoc struct {
	Items []eventDoc `json:"items"`
	// NextCursor continues the list (--cursor); null on the last page.
	NextCursor *string `json:"next_cursor"`
}

func newListDoc(rows []insight.Row, next *outbox.Cursor) listDoc {
	d := listDoc{Items: make([]eventDoc, len(rows))}
	for i, r := range rows {
		d.Items[i] = newEventDoc(r)
	}
	if next != nil {
		s := next.String()
		d.NextCursor = &s
	}
	return d
}

type attemptDoc struct {
	AttemptNo       int       `json:"attempt_no"`
	StartedAt       time.Time `json:"started_at"`
	DurationMS      int64     `json:"duration_ms"`
	StatusCode      int       `json:"status_code"`
	ErrorClass      string    `json:"error_class"`
	Error           string    `json:"error"`
	ResponseSnippet string    `json:"response_snippet"`
	Outcome         string    `json:"outcome"`
}

// detailDoc is an event with its payload, every attempt, oldest first, and the
// operator actions that changed it, oldest first.
type detailDoc struct {
	eventDoc
	Payload    json.RawMessage `json:"payload"`
	AttemptLog []attemptDoc    `json:"attempt_log"`
	Audit      []audit.View    `json:"audit"`
}

func newDetailDoc(r insight.Row, d outbox.EventDetail, actions []audit.Entry) detailDoc {
	out := detailDoc{eventDoc: newEventDoc(r), Payload: d.Payload, AttemptLog: make([]attemptDoc, len(d.AttemptLog)),
		Audit: audit.Views(actions)}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("null")
	}
	for i, a := range d.AttemptLog {
		out.AttemptLog[i] = attemptDoc{AttemptNo: a.No, StartedAt: a.StartedAt.UTC(), DurationMS: a.Duration.Milliseconds(),
			StatusCode: a.StatusCode, ErrorClass: a.ErrorClass, Error: a.Error, ResponseSnippet: a.ResponseSnippet,
			Outcome: a.Outcome}
	}
	return out
}

type auditPageDoc struct {
	Items []audit.View `json:"items"`
	// NextCursor continues the list (--cursor); null on the last page.
	NextCursor *string `json:"next_cursor"`
}

func newAuditPageDoc(p audit.Page) auditPageDoc {
	d := auditPageDoc{Items: audit.Views(p.Items)}
	if p.Next != nil {
		s := p.Next.String()
		d.NextCursor = &s
	}
	return d
}

// traceEventDoc is an event of a trace with logistics' record of its key: null when
// logistics has none, or could not be asked (logistics.available is false).
type traceEventDoc struct {
	detailDoc
	Logistics *logisticsclient.ProcessedEvent `json:"logistics"`
}

type traceDoc struct {
	Invoice   opsapi.Invoice        `json:"invoice"`
	Events    []traceEventDoc       `json:"events"`
	Logistics opsapi.TraceLogistics `json:"logistics"`
}

func newTraceDoc(t ops.Trace, rows []insight.Row) traceDoc {
	d := traceDoc{Invoice: opsapi.NewInvoice(t.Invoice), Events: make([]traceEventDoc, len(t.Events)),
		Logistics: opsapi.NewTraceLogistics(t)}
	for i, ev := range t.Events {
		d.Events[i] = traceEventDoc{detailDoc: newDetailDoc(rows[i], ev, t.Actions[ev.ID])}
		if p, ok := t.Processed(ev.IdempotencyKey); ok {
			d.Events[i].Logistics = &p
		}
	}
	return d
}

// reportDoc is a reconciliation's report: the counts are complete, the lists of
// discrepancies at most reconcile.MaxListed of each kind, oldest first.
type reportDoc struct {
	ID        int64     `json:"id"`
	StartedAt time.Time `json:"started_at"`
	opsapi.ReconciliationRun
	Missing []discrepancyDoc `json:"missing"`
	Unknown []discrepancyDoc `json:"unknown"`
	Overdue []discrepancyDoc `json:"overdue"`
	Clean   bool             `json:"clean"`
}

type discrepancyDoc struct {
	IdempotencyKey string    `json:"idempotency_key"`
	EventID        string    `json:"event_id"`
	InvoiceID      string    `json:"invoice_id"`
	At             time.Time `json:"at"`
	Detail         string    `json:"detail"`
}

func newReportDoc(r reconcile.Report) reportDoc {
	list := func(ds []reconcile.Discrepancy) []discrepancyDoc {
		out := make([]discrepancyDoc, len(ds))
		for i, d := range ds {
			out[i] = discrepancyDoc{IdempotencyKey: d.IdempotencyKey, EventID: d.EventID, InvoiceID: d.InvoiceID,
				At: d.At.UTC(), Detail: d.Detail}
		}
		return out
	}
	return reportDoc{ID: r.ID, StartedAt: r.StartedAt.UTC(), ReconciliationRun: opsapi.NewReconciliationRun(reconciliationOf(r)),
		Missing: list(r.Missing), Unknown: list(r.Unknown), Overdue: list(r.Overdue), Clean: r.OK()}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
