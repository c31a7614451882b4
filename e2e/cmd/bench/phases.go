package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Saturation is the closed-loop run: clerks issue and pay as fast as finance answers.
type Saturation struct {
	Clerks  int     `json:"clerks"`
	Seconds float64 `json:"seconds"`
	// PaymentsPerSec and ProducedPerSec count payments and outbox events committed in
	// the measured window (after the warm-up), by their database timestamps.
	PaymentsPerSec float64 `json:"payments_per_sec"`
	ProducedPerSec float64 `json:"produced_per_sec"`
	// DeliveredDuringLoadPerSec counts deliveries in the same window, while the
	// clerks compete with the dispatcher for the CPU.
	DeliveredDuringLoadPerSec float64 `json:"delivered_during_load_per_sec"`
	// Events is every event the run produced; EndToEndPerSec is Events over the time
	// from the first one's commit to the last one's delivery: the rate at which the
	// system moved events from clerk to shipment.
	Events         int64   `json:"events"`
	EndToEndPerSec float64 `json:"end_to_end_per_sec"`
	// CPU is what producing and delivering one event cost, over the whole run.
	CPU CPU `json:"cpu_per_event"`
	// EventsPerRequest is how many events one delivery request carried on average.
	EventsPerRequest float64 `json:"events_per_request"`
	Failures         int64   `json:"failures"`
}

// Latency is an open-loop run at a fraction of the saturation rate.
type Latency struct {
	Fraction       float64 `json:"fraction"`
	OfferedPerSec  float64 `json:"offered_invoices_per_sec"`
	AchievedPerSec float64 `json:"achieved_invoices_per_sec"`
	Shed           int64   `json:"shed"`
	// PayToShipment is logistics' shipment_history.at of the move to waiting minus
	// finance's payments.created_at: both now() of the two transactions, on one
	// server's clock.
	PayToShipment Dist `json:"pay_to_shipment"`
	Missing       int  `json:"missing"`
	// Split says where the paid events' time went, on finance's side.
	Split Split `json:"split"`
}

// Split divides the paid events' pay→shipment at one load: Queued runs from the
// payment's transaction (the outbox row's created_at, the same now() as the
// payment's, so PayToShipment's start) to the start of the request that delivered
// its event (the attempt log's started_at, taken by finance's clock on the same
// machine); Request is that request's duration, in whole milliseconds. PerRequest is
// the mean number of events in the request that carried a paid event, and
// BehindIssued the fraction of paid events whose invoice's issued event was settled
// as delivered after the payment's transaction began: per-invoice order held them
// back until its request was settled (an upper bound, the settlement's time being
// its own transaction's start).
type Split struct {
	Queued       Dist    `json:"queued"`
	Request      Dist    `json:"request"`
	PerRequest   float64 `json:"events_per_request"`
	BehindIssued float64 `json:"behind_issued"`
}

// Drain is a backlog delivered from its start to empty.
type Drain struct {
	Replicas int   `json:"replicas"`
	Events   int64 `json:"events"`
	// AcceptedPerSec is the payments finance accepted per second while the backlog
	// built up with logistics down (outage runs only).
	AcceptedPerSec float64 `json:"accepted_per_sec,omitempty"`
	// SecondsToEmpty runs from the backlog's release (logistics ready again, or the
	// seed's commit) to the last delivery; EventsPerSec is Events over it.
	SecondsToEmpty float64 `json:"seconds_to_empty"`
	EventsPerSec   float64 `json:"events_per_sec"`
	// DeliveryPerSec is Events over first to last delivery, without the wait for the
	// circuit's probe.
	DeliveryPerSec float64 `json:"delivery_per_sec"`
	// CPU is what delivering one event cost (seeded drains only; the seed's insert is
	// in it).
	CPU CPU `json:"cpu_per_event,omitzero"`
}

// saturation runs clerks in a closed loop for p.Saturation and waits for the outbox
// to drain.
func (e *env) saturation(ctx context.Context, p plan, clerks int) (Saturation, error) {
	s := Saturation{Clerks: clerks}
	start, err := dbNow(ctx, e.fdb)
	if err != nil {
		return s, err
	}
	cpu0, err := e.cpu(ctx)
	if err != nil {
		return s, err
	}
	done := make(chan *tally, 1)
	deadline := time.Now().Add(p.Saturation)
	go func() { done <- closedLoop(ctx, newAPI(e.finance.URL), clerks, math.MaxInt64, deadline, "sat") }()
	pause(ctx, p.Warmup)
	w0, err := dbNow(ctx, e.fdb)
	if err != nil {
		return s, err
	}
	t := <-done
	w1, err := dbNow(ctx, e.fdb)
	if err != nil {
		return s, err
	}
	s.Failures = t.failures
	if err := t.err(); err != nil {
		return s, fmt.Errorf("saturation: %w", err)
	}
	if err := e.windowRates(ctx, &s, w0, w1); err != nil {
		return s, err
	}
	cpu1, err := e.cpuOnceDrained(ctx, p.DrainTimeout)
	if err != nil {
		return s, err
	}
	var first, last time.Time
	err = e.fdb.QueryRow(ctx, `SELECT count(*), min(created_at), max(delivered_at) FROM finance_outbox
		WHERE created_at >= $1`, start).Scan(&s.Events, &first, &last)
	if err != nil {
		return s, fmt.Errorf("saturation: end-to-end rate: %w", err)
	}
	s.EndToEndPerSec = rate(s.Events, last.Sub(first))
	s.CPU = cpu0.perEvent(cpu1, s.Events)
	err = e.fdb.QueryRow(ctx, `SELECT coalesce(count(*)::float8 / nullif(count(DISTINCT started_at), 0), 0)
		FROM finance_outbox_attempts WHERE started_at >= $1`, start).Scan(&s.EventsPerRequest)
	if err != nil {
		return s, fmt.Errorf("saturation: events per request: %w", err)
	}
	return s, nil
}

// windowRates counts the payments, events and deliveries committed between w0 and w1.
func (e *env) windowRates(ctx context.Context, s *Saturation, w0, w1 time.Time) error {
	var payments, produced, delivered int64
	err := e.fdb.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM payments WHERE created_at >= $1 AND created_at < $2),
			(SELECT count(*) FROM finance_outbox WHERE created_at >= $1 AND created_at < $2),
			(SELECT count(*) FROM finance_outbox WHERE delivery_status = 'delivered'
				AND delivered_at >= $1 AND delivered_at < $2)`, w0, w1).Scan(&payments, &produced, &delivered)
	if err != nil {
		return fmt.Errorf("saturation: window counts: %w", err)
	}
	d := w1.Sub(w0)
	s.Seconds = d.Seconds()
	s.PaymentsPerSec, s.ProducedPerSec, s.DeliveredDuringLoadPerSec = rate(payments, d), rate(produced, d), rate(delivered, d)
	return nil
}

// latency offers invoices at fraction of satPerSec in an open loop for p.Latency,
// waits for every event to be delivered, and reads pay→shipment from both databases.
func (e *env) latency(ctx context.Context, p plan, fraction, satPerSec float64) (Latency, error) {
	l := Latency{Fraction: fraction, OfferedPerSec: fraction * satPerSec}
	t, shed := openLoop(ctx, newAPI(e.finance.URL), l.OfferedPerSec, p.Latency, fmt.Sprintf("lat%.0f", fraction*100))
	l.Shed = shed
	l.AchievedPerSec = rate(t.paid.Load(), p.Latency)
	if err := t.err(); err != nil {
		return l, fmt.Errorf("latency at %.0f%%: %w", fraction*100, err)
	}
	if err := e.waitDrained(ctx, p.DrainTimeout); err != nil {
		return l, err
	}
	var err error
	l.PayToShipment, l.Missing, err = e.payToShipment(ctx, t.invoices)
	if err != nil {
		return l, err
	}
	l.Split, err = splitOf(ctx, e.fdb, t.invoices)
	return l, err
}

// splitQuery reads, for each paid event of the invoices given, its wait before the
// request that delivered it, that request's duration and size (the attempts one
// request settles share its start), and whether the invoice's issued event was
// settled as delivered after the payment's transaction began.
const splitQuery = `
WITH paid AS (
	SELECT o.aggregate_key, o.aggregate_seq, o.created_at, a.started_at, a.duration_ms
	FROM finance_outbox o JOIN finance_outbox_attempts a ON a.outbox_id = o.id AND a.outcome = 'delivered'
	WHERE o.event_type = 'invoice.paid' AND o.aggregate_key = ANY($1::text[])
)
SELECT date_part('epoch', p.started_at - p.created_at) * 1e6, p.duration_ms,
	(SELECT count(*) FROM finance_outbox_attempts r WHERE r.started_at = p.started_at),
	coalesce(i.delivered_at > p.created_at, false)
FROM paid p LEFT JOIN finance_outbox i ON i.aggregate_key = p.aggregate_key
	AND i.aggregate_seq = p.aggregate_seq - 1 AND i.event_type = 'invoice.issued'`

// splitOf is the Split of the paid events of invoices, from finance's outbox and
// attempt log.
func splitOf(ctx context.Context, db *pgxpool.Pool, invoices []string) (Split, error) {
	rows, err := db.Query(ctx, splitQuery, invoices)
	if err != nil {
		return Split{}, fmt.Errorf("split of pay→shipment: %w", err)
	}
	defer rows.Close()
	var queued, request []time.Duration
	var size, behind int64
	for rows.Next() {
		var waitMicros float64
		var durationMS, n int64
		var late bool
		if err := rows.Scan(&waitMicros, &durationMS, &n, &late); err != nil {
			return Split{}, fmt.Errorf("split of pay→shipment: %w", err)
		}
		queued = append(queued, time.Duration(waitMicros)*time.Microsecond)
		request = append(request, time.Duration(durationMS)*time.Millisecond)
		size += n
		if late {
			behind++
		}
	}
	if err := rows.Err(); err != nil {
		return Split{}, fmt.Errorf("split of pay→shipment: %w", err)
	}
	s := Split{Queued: distOf(queued), Request: distOf(request)}
	if k := len(queued); k > 0 {
		s.PerRequest, s.BehindIssued = float64(size)/float64(k), float64(behind)/float64(k)
	}
	return s, nil
}

// payToShipment pairs each invoice's payment commit with its shipment's move to
// waiting.
func (e *env) payToShipment(ctx context.Context, invoices []string) (Dist, int, error) {
	paid, err := timesByInvoice(ctx, e.fdb, `SELECT invoice_id::text, created_at FROM payments
		WHERE invoice_id = ANY($1::text[]::uuid[])`, invoices)
	if err != nil {
		return Dist{}, 0, fmt.Errorf("payment times: %w", err)
	}
	shipped, err := timesByInvoice(ctx, e.ldb, `SELECT s.invoice_id::text, h.at FROM shipments s
		JOIN shipment_history h ON h.shipment_id = s.id
		WHERE h.to_state = 'waiting' AND s.invoice_id = ANY($1::text[]::uuid[])`, invoices)
	if err != nil {
		return Dist{}, 0, fmt.Errorf("shipment times: %w", err)
	}
	lat := make([]time.Duration, 0, len(invoices))
	missing := 0
	for _, inv := range invoices {
		p, okP := paid[inv]
		s, okS := shipped[inv]
		if !okP || !okS {
			missing++
			continue
		}
		lat = append(lat, s.Sub(p))
	}
	return distOf(lat), missing, nil
}

func timesByInvoice(ctx context.Context, db *pgxpool.Pool, query string, invoices []string) (map[string]time.Time, error) {
	rows, err := db.Query(ctx, query, invoices)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]time.Time, len(invoices))
	for rows.Next() {
		var inv string
		var at time.Time
		if err := rows.Scan(&inv, &at); err != nil {
			return nil, err
		}
		out[inv] = at
	}
	return out, rows.Err()
}
