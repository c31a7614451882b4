// Package seed makes the invoice events the benchmark seeds, in SQL, so that every
// drainer it measures (handoff's outbox and the River baseline) is handed the same
// events: the same types, sequences, payloads and idempotency keys.
package seed

// Events is a SELECT of $1 invoices' events: for each invoice an invoice.issued
// (sequence 1) and an invoice.paid (sequence 2) with the data finance would give them,
// in the order a stream of clerks would have made them. Its columns are id,
// event_type, payload (jsonb), idempotency_key, aggregate_key, aggregate_seq,
// created_at and n, the invoice's number. created_at steps by 10 µs per invoice and
// ends now, or a day ago when $2 is 'delivered' (history that lies in the past). The
// invoices themselves are not written anywhere: only the events name them.
const Events = `
SELECT gen_random_uuid() AS id, e.typ AS event_type,
	jsonb_build_object('invoice_id', i.id, 'invoice_number', 'SEED-' || i.n, 'customer_id', 'bench-seed',
		'currency', 'EUR', 'total_minor', 12000, 'paid_minor', e.paid, 'status', e.status)
	|| CASE WHEN e.seq = 2 THEN jsonb_build_object('payment_id', 'pay-' || i.id, 'amount_minor', 12000)
	        ELSE '{}'::jsonb END AS payload,
	e.typ || ':' || i.id || CASE WHEN e.seq = 2 THEN ':pay-' || i.id ELSE '' END AS idempotency_key,
	i.id::text AS aggregate_key, e.seq AS aggregate_seq, i.at AS created_at, i.n
FROM (SELECT gen_random_uuid() AS id, g AS n,
             now() - CASE WHEN $2::text = 'delivered' THEN interval '1 day' ELSE interval '0' END
                   - make_interval(secs => ($1 - g) / 100000.0) AS at
      FROM generate_series(1, $1::int) AS g) AS i
CROSS JOIN (VALUES ('invoice.issued', 1, 0, 'issued'), ('invoice.paid', 2, 12000, 'paid'))
	AS e (typ, seq, paid, status)
ORDER BY i.n, e.seq`

// Invoices is how many invoices make events events: two each, rounded up.
func Invoices(events int) int { return (events + 1) / 2 }
