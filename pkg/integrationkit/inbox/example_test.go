package inbox_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
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
// the change commit together.
func ExampleInbox_Process() {
	var db *bun.DB // opened with pgdb.Open
	in, err := inbox.New("orders_processed_events")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"order_id":"o-1","status":"paid"}`)
	hash, err := inbox.HashJSON(body)
	if err != nil {
		panic(err) // not JSON: answer 400
	}
	out, err := in.Process(context.Background(), db, inbox.Item{Key: "order.paid:o-1", PayloadHash: hash},
		func(ctx context.Context, tx bun.Tx) (string, error) {
			_, err := tx.NewRaw(`UPDATE orders SET status = 'paid' WHERE id = ?`, "o-1").Exec(ctx)
			return inbox.ResultApplied, err
		})
	switch {
	case errors.Is(err, inbox.ErrKeyReuse):
		// answer 422: the key names another request
	case err != nil:
		// answer 5xx (or what the apply error means): nothing was stored
	default:
		fmt.Println("duplicate:", out.Duplicate)
	}
}
