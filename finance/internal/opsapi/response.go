package opsapi

import (
	"encoding/json"
	"time"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/outbox"
)

// The documents below are the API's; finance's CLI prints them too (`finance
// outbox stats|trace --json`, `finance reconcile --json`), so a script reads the
// command and the API alike. Field names are the API's contract.

// Stats is the outbox's state: GET /v1/ops/outbox/stats.
type Stats struct {
	// Counts has the number of events of each status: pending, delivered, failed, skipped.
	Counts                  map[string]int64 `json:"counts"`
	InFlight                int64            `json:"in_flight"`
	OldestPendingAgeSeconds float64          `json:"oldest_pending_age_seconds"`
	AsOf                    time.Time        `json:"as_of"`
	Circuits                []Circuit        `json:"circuits"`
	// Reconciliation is the latest one; null when none ran or none is configured.
	Reconciliation *Reconciliation `json:"reconciliation"`
	// ReconciliationNote says why Reconciliation is null.
	ReconciliationNote string `json:"reconciliation_note,omitempty"`
}

// Circuit is a destination's circuit breaker.
type Circuit struct {
	Destination string     `json:"destination"`
	State       string     `json:"state"`
	Failures    int        `json:"failures"`
	OpenUntil   *time.Time `json:"open_until"`
	ChangedAt   time.Time  `json:"changed_at"`
	// PausedAt is when an operator paused the destination; null when not paused.
	PausedAt *time.Time `json:"paused_at"`
}

// ReconciliationRun is a reconciliation's window and what it counted in it; the
// counts are complete even where the lists of discrepancies are cut short.
type ReconciliationRun struct {
	FinishedAt    time.Time         `json:"finished_at"`
	From          time.Time         `json:"from"`
	To            time.Time         `json:"to"`
	Delivered     int               `json:"delivered"`
	Processed     int               `json:"processed"`
	Skipped       int               `json:"skipped"`
	Discrepancies DiscrepancyCounts `json:"discrepancies"`
}

// DiscrepancyCounts counts a reconciliation's discrepancies of each kind.
type DiscrepancyCounts struct {
	Missing int `json:"missing"`
	Unknown int `json:"unknown"`
	Overdue int `json:"overdue"`
}

// Reconciliation is the latest reconciliation in the stats, with the idempotency
// keys of each kind of discrepancy (perhaps cut short).
type Reconciliation struct {
	ReconciliationRun
	Missing []string `json:"missing"`
	Unknown []string `json:"unknown"`
	Overdue []string `json:"overdue"`
	// Error says why the run could not finish.
	Error string `json:"error,omitempty"`
}

// Invoice is the invoice of a trace.
type Invoice struct {
	ID         string    `json:"id"`
	Number     string    `json:"number"`
	Status     string    `json:"status"`
	CustomerID string    `json:"customer_id"`
	Currency   string    `json:"currency"`
	TotalMinor int64     `json:"total_minor"`
	PaidMinor  int64     `json:"paid_minor"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// TraceLogistics is logistics' record of a trace's invoice.
type TraceLogistics struct {
	Available bool `json:"available"`
	// Note says why logistics' record is not available.
	Note      string                           `json:"note,omitempty"`
	Processed []logisticsclient.ProcessedEvent `json:"processed"`
	Shipment  *logisticsclient.Shipment        `json:"shipment"`
}

// NewStats shows an overview of the outbox.
func NewStats(ov ops.Overview) Stats {
	st := ov.Stats
	out := Stats{
		Counts: map[string]int64{
			outbox.StatusPending: st.Pending, outbox.StatusDelivered: st.Delivered, outbox.StatusFailed: st.Failed,
			outbox.StatusSkipped: st.Skipped,
		},
		InFlight: st.InFlight, OldestPendingAgeSeconds: st.OldestPendingAge.Seconds(), AsOf: st.Now.UTC(),
		Circuits: make([]Circuit, len(ov.Circuits)), ReconciliationNote: ov.ReconciliationNote,
	}
	for i, c := range ov.Circuits {
		out.Circuits[i] = newCircuit(c)
	}
	if r := ov.Reconciliation; r != nil {
		out.Reconciliation = &Reconciliation{ReconciliationRun: NewReconciliationRun(*r),
			Missing: nonNil(r.Missing), Unknown: nonNil(r.Unknown), Overdue: nonNil(r.Overdue), Error: r.Error}
	}
	return out
}

func newCircuit(c breaker.Circuit) Circuit {
	return Circuit{Destination: c.Destination, State: string(c.State), Failures: c.Failures,
		OpenUntil: utc(c.OpenUntil), ChangedAt: c.ChangedAt.UTC(), PausedAt: utc(c.PausedAt)}
}

// NewReconciliationRun shows r's window and counts.
func NewReconciliationRun(r ops.Reconciliation) ReconciliationRun {
	return ReconciliationRun{FinishedAt: r.FinishedAt.UTC(), From: r.From.UTC(), To: r.To.UTC(),
		Delivered: r.Delivered, Processed: r.Processed, Skipped: r.Skipped,
		Discrepancies: DiscrepancyCounts{Missing: r.MissingCount, Unknown: r.UnknownCount, Overdue: r.OverdueCount}}
}

// NewInvoice shows inv.
func NewInvoice(inv invoice.Invoice) Invoice {
	return Invoice{ID: inv.ID.String(), Number: inv.Number, Status: string(inv.Status),
		CustomerID: inv.CustomerID, Currency: inv.Currency, TotalMinor: inv.TotalMinor, PaidMinor: inv.PaidMinor,
		CreatedAt: inv.CreatedAt.UTC(), UpdatedAt: inv.UpdatedAt.UTC()}
}

// NewTraceLogistics shows logistics' record of t's invoice: available, or a note why
// not.
func NewTraceLogistics(t ops.Trace) TraceLogistics {
	out := TraceLogistics{Note: t.LogisticsNote, Processed: []logisticsclient.ProcessedEvent{}}
	if l := t.Logistics; l != nil {
		out.Available = true
		out.Processed = append(out.Processed, l.Items...)
		out.Shipment = l.Shipment
	}
	return out
}

// The API's other response shapes.

type eventJSON struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	IdempotencyKey string          `json:"idempotency_key"`
	InvoiceID      string          `json:"invoice_id"`
	Sequence       int64           `json:"sequence"`
	Destination    string          `json:"destination"`
	CorrelationID  string          `json:"correlation_id"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	Requests       int             `json:"requests"`
	InFlight       bool            `json:"in_flight"`
	LastError      string          `json:"last_error,omitempty"`
	LastStatusCode int             `json:"last_status_code,omitempty"`
	FailedReason   string          `json:"failed_reason,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	LastAttemptAt  *time.Time      `json:"last_attempt_at"`
	NextAttemptAt  time.Time       `json:"next_attempt_at"`
	DeliveredAt    *time.Time      `json:"delivered_at"`
	SkippedAt      *time.Time      `json:"skipped_at,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

type attemptJSON struct {
	AttemptNo       int       `json:"attempt_no"`
	StartedAt       time.Time `json:"started_at"`
	DurationMS      int64     `json:"duration_ms"`
	StatusCode      int       `json:"status_code,omitempty"`
	ErrorClass      string    `json:"error_class,omitempty"`
	Error           string    `json:"error,omitempty"`
	ResponseSnippet string    `json:"response_snippet,omitempty"`
	Outcome         string    `json:"outcome"`
}

type detailJSON struct {
	eventJSON
	AttemptLog []attemptJSON `json:"attempt_log"`
	// Audit are the operator actions that changed the event, oldest first.
	Audit []audit.View `json:"audit"`
	// Logistics is logistics' record of the event's key, in a trace; null when it has none.
	Logistics *logisticsclient.ProcessedEvent `json:"logistics,omitempty"`
}

type listJSON struct {
	Items      []eventJSON `json:"items"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

type retryJSON struct {
	Retried int  `json:"retried"`
	More    bool `json:"more"`
	// DryRun says nothing was retried: Retried is how many would have been.
	DryRun bool `json:"dry_run,omitempty"`
}

type skipJSON struct {
	Skipped int  `json:"skipped"`
	More    bool `json:"more"`
	// DryRun says nothing was skipped: Skipped is how many would have been.
	DryRun bool `json:"dry_run,omitempty"`
}

type retargetJSON struct {
	Retargeted int `json:"retargeted"`
}

type destinationJSON struct {
	Destination string `json:"destination"`
	Paused      bool   `json:"paused"`
	// Hastened, on a resume, counts the deferred events made due at once.
	Hastened *int `json:"hastened,omitempty"`
}

type auditPageJSON struct {
	Items      []audit.View `json:"items"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

type traceJSON struct {
	Invoice   Invoice        `json:"invoice"`
	Events    []detailJSON   `json:"events"`
	Logistics TraceLogistics `json:"logistics"`
}

func newEventJSON(ev outbox.StoredEvent) eventJSON {
	return eventJSON{
		ID: ev.ID.String(), Type: ev.EventType, IdempotencyKey: ev.IdempotencyKey, InvoiceID: ev.AggregateKey,
		Sequence: ev.Sequence, Destination: ev.Destination, CorrelationID: ev.CorrelationID, Status: ev.Status,
		Attempts: ev.Attempts, Requests: ev.Requests, InFlight: ev.InFlight, LastError: ev.LastError,
		LastStatusCode: ev.LastStatusCode, FailedReason: ev.FailedReason, CreatedAt: ev.CreatedAt.UTC(),
		LastAttemptAt: utc(ev.LastAttemptAt), NextAttemptAt: ev.NextAttemptAt.UTC(), DeliveredAt: utc(ev.DeliveredAt),
		SkippedAt: utc(ev.SkippedAt),
	}
}

// newDetailJSON shows an event with its payload, attempts and the operator actions on
// it, and logistics' record of it when the caller has one.
func newDetailJSON(d outbox.EventDetail, actions []audit.Entry, processed *logisticsclient.ProcessedEvent) detailJSON {
	out := detailJSON{eventJSON: newEventJSON(d.StoredEvent), AttemptLog: make([]attemptJSON, len(d.AttemptLog)),
		Audit: audit.Views(actions), Logistics: processed}
	out.Payload = d.Payload
	for i, a := range d.AttemptLog {
		out.AttemptLog[i] = attemptJSON{AttemptNo: a.No, StartedAt: a.StartedAt.UTC(),
			DurationMS: a.Duration.Milliseconds(), StatusCode: a.StatusCode, ErrorClass: a.ErrorClass,
			Error: a.Error, ResponseSnippet: a.ResponseSnippet, Outcome: a.Outcome}
	}
	return out
}

func newTraceJSON(t ops.Trace) traceJSON {
	out := traceJSON{Invoice: NewInvoice(t.Invoice), Events: make([]detailJSON, len(t.Events)),
		Logistics: NewTraceLogistics(t)}
	for i, d := range t.Events {
		var rec *logisticsclient.ProcessedEvent
		if p, ok := t.Processed(d.IdempotencyKey); ok {
			rec = &p
		}
		out.Events[i] = newDetailJSON(d, t.Actions[d.ID], rec)
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
