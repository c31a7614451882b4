package ops

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
)

// maxLogisticsRecords bounds the processed keys read for one invoice (it has a handful).
const maxLogisticsRecords = 1000

// Trace is "what happened to invoice 4711": the invoice, each of its events with every
// attempt and every operator action on it, and what logistics recorded for it.
type Trace struct {
	Invoice invoice.Invoice
	// Events are in sequence order, archived ones included when an archive is configured.
	Events []outbox.EventDetail
	// Actions are, by event id, the operator actions that changed each event, oldest
	// first.
	Actions map[uuid.UUID][]audit.Entry
	// Logistics is logistics' record (processed keys and the shipment); nil when it
	// could not be read, and LogisticsNote says why.
	Logistics     *logisticsclient.Page
	LogisticsNote string
}

// Processed returns logistics' record of key, if logistics has one.
func (t Trace) Processed(key string) (logisticsclient.ProcessedEvent, bool) {
	if t.Logistics == nil {
		return logisticsclient.ProcessedEvent{}, false
	}
	i := slices.IndexFunc(t.Logistics.Items, func(p logisticsclient.ProcessedEvent) bool { return p.IdempotencyKey == key })
	if i < 0 {
		return logisticsclient.ProcessedEvent{}, false
	}
	return t.Logistics.Items[i], true
}

// Trace answers for the invoice ref names (its id, INV-004711 or 4711). The logistics
// side is read last, outside any transaction; its failure leaves a note, not an error.
func (s *Service) Trace(ctx context.Context, ref string) (Trace, error) {
	inv, err := s.cfg.Invoices.Find(ctx, ref)
	if err != nil {
		return Trace{}, err
	}
	t := Trace{Invoice: inv}
	if t.Events, err = s.events(ctx, inv.ID.String()); err != nil {
		return Trace{}, err
	}
	ids := make([]uuid.UUID, len(t.Events))
	for i, ev := range t.Events {
		ids[i] = ev.ID
	}
	if t.Actions, err = s.audit.ForEvents(ctx, s.cfg.DB, ids...); err != nil {
		return Trace{}, err
	}
	t.Logistics, t.LogisticsNote = s.logistics(ctx, inv.ID)
	return t, nil
}

// events reads the live outbox and, when configured, the archive, in sequence order.
func (s *Service) events(ctx context.Context, key string) ([]outbox.EventDetail, error) {
	live, err := s.cfg.Outbox.Aggregate(ctx, s.cfg.DB, key)
	if err != nil || s.cfg.Archive == nil {
		return live, err
	}
	archived, err := s.cfg.Archive.AggregateEvents(ctx, key)
	if err != nil {
		return nil, err
	}
	all := append(archived, live...)
	slices.SortStableFunc(all, func(a, b outbox.EventDetail) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return all, nil
}

const unconfigured = "logistics record unavailable: no LOGISTICS_OPS_TOKEN configured"

func (s *Service) logistics(ctx context.Context, invoiceID uuid.UUID) (*logisticsclient.Page, string) {
	if s.cfg.Logistics == nil {
		return nil, unconfigured
	}
	page, err := s.cfg.Logistics.ProcessedEvents(ctx, logisticsclient.Query{InvoiceID: invoiceID, Limit: maxLogisticsRecords})
	var status *logisticsclient.StatusError
	var blocked *egress.BlockedError
	switch {
	case errors.Is(err, logisticsclient.ErrNotConfigured):
		return nil, unconfigured
	case errors.As(err, &blocked):
		s.log.WarnContext(ctx, "read logistics record", "invoice_id", invoiceID, "err", err)
		return nil, "logistics record unavailable: the SSRF guard refuses LOGISTICS_API_URL (see OUTBOUND_ALLOW)"
	case errors.As(err, &status):
		s.log.WarnContext(ctx, "read logistics record", "invoice_id", invoiceID, "err", err)
		return nil, "logistics record unavailable: " + status.Error()
	case err != nil:
		s.log.WarnContext(ctx, "read logistics record", "invoice_id", invoiceID, "err", err)
		return nil, "logistics record unavailable: logistics did not answer"
	}
	return &page, ""
}
