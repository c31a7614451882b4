package insight

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun/dialect/pgdialect"

	"handoff/pkg/integrationkit/outbox"
)

// Blocker is a failed event: it holds back every later event of its invoice, since
// the dispatcher sends an invoice's events one at a time, in sequence.
type Blocker struct {
	ID           uuid.UUID `bun:"id"`
	AggregateKey string    `bun:"aggregate_key"`
	Sequence     int64     `bun:"aggregate_seq"`
	EventType    string    `bun:"event_type"`
}

// Blockers are the earliest failed event of some invoices, by aggregate key.
type Blockers map[string]Blocker

// Of returns the failed event that holds back the event seq of the invoice key: the
// invoice's earliest failed event, when it comes before seq.
func (b Blockers) Of(key string, seq int64) (Blocker, bool) {
	f, ok := b[key]
	if !ok || f.Sequence >= seq {
		return Blocker{}, false
	}
	return f, true
}

// Blockers returns the earliest failed event of each invoice whose aggregate key is
// given, one probe each of the outbox's index of undelivered events by aggregate (the
// query names that index's condition so the planner need not prove it).
func (s *Store) Blockers(ctx context.Context, keys []string) (Blockers, error) {
	out := Blockers{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []Blocker
	err := s.db.NewRaw(`SELECT f.id, f.aggregate_key, f.aggregate_seq, f.event_type
		FROM unnest(?::text[]) AS k(key), LATERAL (
			SELECT id, aggregate_key, aggregate_seq, event_type FROM finance_outbox
			WHERE aggregate_key = k.key AND delivery_status = 'failed' AND delivery_status <> 'delivered'
			ORDER BY aggregate_seq LIMIT 1) AS f`, pgdialect.Array(keys)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("insight: blockers: %w", err)
	}
	for _, r := range rows {
		out[r.AggregateKey] = r
	}
	return out, nil
}

// Row is an event with what explains it in a list: its invoice's number and, when a
// failed earlier event of its invoice holds it back, that event.
type Row struct {
	outbox.StoredEvent
	// Invoice is the invoice's number, or its aggregate key when it has none.
	Invoice string
	// WaitingFor is the failed event holding this pending one back; nil when none.
	WaitingFor *Blocker
}

// Rows looks up the invoice numbers of events and the failed events holding the
// pending ones back, in one query each (InvoiceNumbers, Blockers).
func (s *Store) Rows(ctx context.Context, events []outbox.StoredEvent) ([]Row, error) {
	var keys, pendingKeys []string
	for _, ev := range events {
		keys = append(keys, ev.AggregateKey)
		if ev.Status == outbox.StatusPending {
			pendingKeys = append(pendingKeys, ev.AggregateKey)
		}
	}
	numbers, err := s.InvoiceNumbers(ctx, compact(keys))
	if err != nil {
		return nil, err
	}
	blockers, err := s.Blockers(ctx, compact(pendingKeys))
	if err != nil {
		return nil, err
	}
	rows := make([]Row, len(events))
	for i, ev := range events {
		rows[i] = Row{StoredEvent: ev, Invoice: cmp.Or(numbers[ev.AggregateKey], ev.AggregateKey)}
		if ev.Status != outbox.StatusPending {
			continue
		}
		if b, ok := blockers.Of(ev.AggregateKey, ev.Sequence); ok {
			rows[i].WaitingFor = &b
		}
	}
	return rows, nil
}

// compact returns keys sorted without repeats.
func compact(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}

// InvoiceNumbers returns the numbers (INV-004711) of the invoices whose ids are given
// as outbox aggregate keys, by key; a key that is no invoice id is left out.
func (s *Store) InvoiceNumbers(ctx context.Context, keys []string) (map[string]string, error) {
	out := map[string]string{}
	var ids []string
	for _, k := range keys {
		if _, err := uuid.Parse(k); err == nil {
			ids = append(ids, k)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID     string `bun:"id"`
		Number string `bun:"number"`
	}
	err := s.db.NewRaw(`SELECT id::text AS id, number FROM invoices WHERE id = ANY(?::uuid[])`, pgdialect.Array(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("insight: invoice numbers: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Number
	}
	return out, nil
}

// Alert is one row of finance_alerts: one alert key with its counts and whether its
// latest occurrences reached on-call.
type Alert struct {
	Key   string `bun:"alert_key"`
	Kind  string `bun:"kind"`
	Title string `bun:"title"`
	// Unsent counts occurrences not yet in a sent message; Total every occurrence.
	Unsent        int64      `bun:"unsent_count"`
	Total         int64      `bun:"total_count"`
	FirstSeen     time.Time  `bun:"first_seen_at"`
	LastSeen      time.Time  `bun:"last_seen_at"`
	SentAt        *time.Time `bun:"sent_at"`
	SendFailures  int        `bun:"send_failures"`
	LastSendError string     `bun:"last_send_error"`
	// EventID and Aggregate name the latest occurrence's event and invoice, if any.
	EventID   string `bun:"event_id"`
	Aggregate string `bun:"aggregate"`
}

// maxAlerts bounds the alerts panel; keys are per kind and destination, so a handful.
const maxAlerts = 50

// Alerts returns the alert rows the pager keeps, the most recently seen first.
func (s *Store) Alerts(ctx context.Context) ([]Alert, error) {
	var out []Alert
	err := s.db.NewRaw(`SELECT alert_key, kind, title, unsent_count, total_count, first_seen_at,
			last_seen_at, sent_at, send_failures, coalesce(last_send_error, '') AS last_send_error,
			coalesce(sample->>'event_id', '') AS event_id, coalesce(sample->>'aggregate', '') AS aggregate
		FROM finance_alerts ORDER BY last_seen_at DESC LIMIT ?`, maxAlerts).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("insight: alerts: %w", err)
	}
	return out, nil
}

// Destination is a destination undelivered events are addressed to, with how many.
type Destination struct {
	URL     string `bun:"destination"`
	Pending int    `bun:"pending"`
	Failed  int    `bun:"failed"`
}

// Destinations returns every destination that pending or failed events are addressed
// to, by URL: after LOGISTICS_WEBHOOK_URL changes, the old one is listed here until
// its events are retargeted. It reads the outbox's index of undelivered events.
func (s *Store) Destinations(ctx context.Context) ([]Destination, error) {
	var out []Destination
	err := s.db.NewRaw(`SELECT destination,
			count(*) FILTER (WHERE delivery_status = 'pending') AS pending,
			count(*) FILTER (WHERE delivery_status = 'failed') AS failed
		FROM finance_outbox
		WHERE delivery_status IN ('pending', 'failed') AND delivery_status <> 'delivered'
		GROUP BY destination ORDER BY destination`).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("insight: destinations: %w", err)
	}
	return out, nil
}
