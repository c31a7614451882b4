package retention_test

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/retention"
)

// A service archives its delivered outbox events after 30 days and purges its inbox
// after 90, every night at three, on one replica at a time.
func Example() {
	var db *bun.DB // the service's database
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
	fmt.Println("scheduled")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a service runs it until SIGTERM
	_ = r.Run(ctx)
	// Output: scheduled
}
