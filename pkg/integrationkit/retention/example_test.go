package retention_test

import (
	"context"
	"fmt"
	"time"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/retention"
)

// A service archives its delivered outbox events after 30 days and purges its inbox
// after 90, every night at three, on one replica at a time. Here it runs the tasks
// once over an event and a record past their windows and one of each within them.
func Example() {
	db, done := pgtest.ForExample("retention", outbox.Schema("orders_outbox")+
		retention.ArchiveSchema("orders_outbox")+inbox.Schema("orders_inbox"))
	defer done()
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO orders_outbox (id, event_type, payload, idempotency_key, destination, aggregate_key,
			aggregate_seq, delivery_status, created_at, delivered_at)
		SELECT gen_random_uuid(), 'order.paid', '{}', 'k-' || n, 'https://receiver.example/hooks', 'o-' || n,
			1, 'delivered', now() - make_interval(days => n), now() - make_interval(days => n)
		FROM unnest(ARRAY[40, 2]) AS n`,
		`INSERT INTO orders_inbox (idempotency_key, payload_hash, result, received_at)
		SELECT 'k-' || n, '\x00', 'applied', now() - make_interval(days => n) FROM unnest(ARRAY[100, 2]) AS n`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			panic(err)
		}
	}
	archive, err := retention.ArchiveOutbox(retention.ArchiveSpec{Outbox: "orders_outbox", OlderThan: 30 * 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	purge, err := retention.Purge(retention.PurgeSpec{Table: "orders_inbox", Key: "idempotency_key",
		Time: "received_at", OlderThan: 90 * 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	r, err := retention.New(db, retention.Config{Schedule: "0 3 * * *", Lock: "orders:retention",
		Tasks: []retention.Task{archive, purge}})
	if err != nil {
		panic(err)
	}
	rep, err := r.RunOnce(ctx)
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Counts {
		fmt.Printf("%s: %d row(s) past the window\n", c.Task, c.Rows)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel() // a service runs it on its schedule until SIGTERM
	_ = r.Run(ctx)
	// Output:
	// orders_outbox: 1 row(s) past the window
	// orders_inbox: 1 row(s) past the window
}
