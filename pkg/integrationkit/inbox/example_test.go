package inbox_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// A receiver hashes the request's content, not its bytes, so a sender that
// re-encodes the same document is still recognised.
func ExampleHashJSON() {
	a, _ := inbox.HashJSON([]byte(`{"id":"evt-1","amount":100}`))
	b, _ := inbox.HashJSON([]byte(`{ "amount": 100, "id": "evt-1" }`))
	fmt.Println(hex.EncodeToString(a) == hex.EncodeToString(b))
	// Output: true
}

// A webhook handler wraps its business change in Process; the record of the key and
// the change commit together, and a retry of the same request applies nothing.
func ExampleInbox_Process() {
	db, done := pgtest.ForExample("inbox", inbox.Schema("orders_processed_events")+
		`CREATE TABLE orders (id text PRIMARY KEY, paid_count int NOT NULL DEFAULT 0);
		INSERT INTO orders VALUES ('o-1');`)
	defer done()
	in, err := inbox.New("orders_processed_events")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"order_id":"o-1","status":"paid"}`)
	hash, err := inbox.HashJSON(body)
	if err != nil {
		panic(err) // not JSON: answer 400
	}
	for range 2 { // the sender retries: the first answer was lost
		out, err := in.Process(context.Background(), db, inbox.Item{Key: "order.paid:o-1", PayloadHash: hash},
			func(ctx context.Context, r pgdb.Runner) (string, error) {
				_, err := r.Exec(ctx, `UPDATE orders SET paid_count = paid_count + 1 WHERE id = $1`, "o-1")
				return inbox.ResultApplied, err
			})
		switch {
		case errors.Is(err, inbox.ErrKeyReuse):
			// answer 422: the key names another request
		case err != nil:
			// answer 5xx (or what the apply error means): nothing was stored
		default:
			fmt.Println("duplicate:", out.Duplicate, "result:", out.Result)
		}
	}
	var paid int
	if err := db.NewRaw(`SELECT paid_count FROM orders WHERE id = 'o-1'`).Scan(context.Background(), &paid); err != nil {
		panic(err)
	}
	fmt.Println("applied", paid, "time")
	// Output:
	// duplicate: false result: applied
	// duplicate: true result: applied
	// applied 1 time
}
