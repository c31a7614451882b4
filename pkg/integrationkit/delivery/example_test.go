package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/webhook"
)

// settledOnce is an Observer telling the example the first outcome settled.
type settledOnce chan outbox.Outcome

func (s settledOnce) Settled(_ context.Context, _ outbox.Record, out outbox.Outcome) {
	select {
	case s <- out:
	default: // an observer must not block the dispatcher
	}
}

func (settledOnce) CircuitChanged(context.Context, string, breaker.Transition, outbox.Record) {}

// A service writes its business change and the event in one transaction; a
// dispatcher, woken when it commits, signs the event and delivers it to the
// receiver, here an httptest server that verifies the signature.
func Example() {
	db, done := pgtest.ForExample("delivery", outbox.Schema("orders_outbox")+
		`CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL);
		INSERT INTO orders VALUES ('o-1', 'open');`)
	defer done()
	ctx := context.Background()
	secret := [][]byte{[]byte("0123456789abcdef0123456789abcdef")}

	received := make(chan string, 1)
	verifier := webhook.NewVerifier(secret)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var env delivery.Envelope
		_ = json.Unmarshal(body, &env)
		received <- fmt.Sprintf("received %s #%d %s, key %s, attempt %s", env.Type, env.Sequence, env.Data,
			r.Header.Get(delivery.HeaderIdempotencyKey), r.Header.Get(delivery.HeaderAttempt))
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()

	store, err := outbox.NewStore("orders_outbox")
	if err != nil {
		panic(err)
	}
	var id uuid.UUID
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewRaw(`UPDATE orders SET status = 'paid' WHERE id = ?`, "o-1").Exec(ctx); err != nil {
			return err
		}
		id, err = store.Enqueue(ctx, tx, outbox.Event{Type: "order.paid", AggregateKey: "o-1", Sequence: 1,
			IdempotencyKey: "order.paid:o-1", Destination: receiver.URL + "/hooks",
			Payload: map[string]string{"order_id": "o-1"}})
		return err
	})
	if err != nil {
		panic(err)
	}

	// The receiver listens on loopback, which the egress guard refuses unless allowed.
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		panic(err)
	}
	settled := make(settledOnce, 1)
	d, err := delivery.New(db, store, webhook.NewSigner(secret), delivery.Config{},
		delivery.Deps{Log: slog.New(slog.DiscardHandler), Guard: egress.New(egress.Config{Allow: allow}), Observer: settled})
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(runCtx) }()

	fmt.Println(<-received)
	// The answer is settled a moment after the receiver saw the request; the observer
	// hears of it once it is committed.
	select {
	case <-settled:
	case <-time.After(10 * time.Second):
		panic("not settled within 10 s")
	}
	ev, err := store.Detail(ctx, db, id)
	if err != nil {
		panic(err)
	}
	stop() // a service runs it until SIGTERM
	if err := <-stopped; err != nil {
		panic(err)
	}
	fmt.Println("outbox:", ev.Status, "after", ev.Requests, "request")
	// Output:
	// received order.paid #1 {"order_id":"o-1"}, key order.paid:o-1, attempt 1
	// outbox: delivered after 1 request
}
