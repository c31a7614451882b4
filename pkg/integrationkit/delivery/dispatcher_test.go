package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/egress"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/webhook"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

var secret = []byte("0123456789abcdef0123456789abcdef")

// loopback is the guard of a test dispatcher: its receivers listen on 127.0.0.1.
func loopback(t *testing.T) *egress.Dialer {
	t.Helper()
	allow, err := egress.ParseAllowlist("127.0.0.1/32")
	require.NoError(t, err)
	return egress.New(egress.Config{Allow: allow})
}

// receiver is a scripted HTTP receiver: it answers the scripted statuses in turn
// (then 200) and records every request it verified.
type receiver struct {
	mu       sync.Mutex
	script   []func(w http.ResponseWriter)
	requests []seen
	verifier *webhook.Verifier
}

type seen struct {
	key      string
	attempt  int
	envelope delivery.Envelope
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := r.verifier.Verify(req.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var env delivery.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	attempt, _ := strconv.Atoi(req.Header.Get(delivery.HeaderAttempt))
	r.mu.Lock()
	r.requests = append(r.requests, seen{key: req.Header.Get(delivery.HeaderIdempotencyKey), attempt: attempt, envelope: env})
	var answer func(w http.ResponseWriter)
	if len(r.script) > 0 {
		answer, r.script = r.script[0], r.script[1:]
	}
	r.mu.Unlock()
	if answer == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	answer(w)
}

func (r *receiver) seen() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.requests...)
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	}
}

type bundle struct {
	db    *bun.DB
	store *outbox.Store
	recv  *receiver
	url   string
	// observed hears every dispatcher the bundle runs.
	observed *observed
}

func setup(t *testing.T, script ...func(w http.ResponseWriter)) *bundle {
	t.Helper()
	db, _, store := outboxtest.Setup(t)
	recv := &receiver{script: script, verifier: webhook.NewVerifier([][]byte{secret})}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	return &bundle{db: db, store: store, recv: recv, url: srv.URL, observed: newObserved()}
}

func (b *bundle) enqueue(t *testing.T, aggregate string, seq int64) {
	t.Helper()
	_, err := b.store.Enqueue(context.Background(), b.db, outbox.Event{
		Type: "thing.happened", AggregateKey: aggregate, Sequence: seq,
		IdempotencyKey: fmt.Sprintf("thing.happened:%s:%d", aggregate, seq),
		Destination:    b.url, Payload: map[string]any{"aggregate": aggregate, "seq": seq},
	})
	require.NoError(t, err)
}

// start runs a dispatcher until the test ends.
func (b *bundle) start(t *testing.T, cfg delivery.Config) {
	t.Helper()
	if len(cfg.Backoff) == 0 {
		cfg.Backoff = backoff.Schedule{20 * time.Millisecond}
	}
	d, err := delivery.New(b.db, b.store, webhook.NewSigner([][]byte{secret}), cfg,
		delivery.Deps{Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
			Guard: loopback(t), Observer: b.observed})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

type row struct {
	Status   string `bun:"delivery_status"`
	Attempts int    `bun:"delivery_attempts"`
	Requests int    `bun:"request_count"`
	Reason   string `bun:"failed_reason"`
	Leased   bool   `bun:"leased"`
}

func (b *bundle) rows(t *testing.T) []row {
	t.Helper()
	var rows []row
	err := b.db.NewRaw(`SELECT delivery_status, delivery_attempts, request_count,
		coalesce(failed_reason, '') AS failed_reason, lease_token IS NOT NULL AS leased
		FROM kit_outbox ORDER BY aggregate_key, aggregate_seq`).Scan(context.Background(), &rows)
	require.NoError(t, err)
	return rows
}

// waitSettled waits until the bundle's dispatchers report every event pending now
// settled for good, or fails the test; it returns the rows then.
func (b *bundle) waitSettled(t *testing.T, within time.Duration) []row {
	t.Helper()
	since := b.observed.outcomes()
	var pending []uuid.UUID
	require.NoError(t, b.db.NewRaw(`SELECT id FROM kit_outbox WHERE delivery_status = ?`, outbox.StatusPending).
		Scan(context.Background(), &pending))
	b.observed.waitFinal(t, within, since, pending)
	return b.rows(t)
}

func TestOutcomesAgainstAScriptedReceiver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		script   []func(w http.ResponseWriter)
		max      int
		status   string
		attempts int
		requests int
		reason   string
	}{
		{"500 503 200 delivers at attempt 3", []func(http.ResponseWriter){status(500), status(503)}, 8, "delivered", 3, 3, ""},
		{"400 dead-letters after one request", []func(http.ResponseWriter){status(400)}, 8, "failed", 1, 1, "rejected_by_receiver"},
		{"301 dead-letters at once", []func(http.ResponseWriter){status(301, "Location", "http://example.com/")}, 8, "failed", 1, 1, "redirect_not_followed"},
		{"500 x4 with max 4 fails after 4", []func(http.ResponseWriter){status(500), status(500), status(500), status(500)}, 4, "failed", 4, 4, "max_attempts_exhausted"},
		{"429 Retry-After 1 does not spend the budget", []func(http.ResponseWriter){status(429, "Retry-After", "1")}, 8, "delivered", 1, 2, ""},
		{"401 is retried and counted", []func(http.ResponseWriter){status(401)}, 8, "delivered", 2, 2, ""},
		{"409 is retried", []func(http.ResponseWriter){status(409)}, 8, "delivered", 2, 2, ""},
		{"422 dead-letters", []func(http.ResponseWriter){status(422)}, 8, "failed", 1, 1, "rejected_by_receiver"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.script...)
			b.enqueue(t, "agg-1", 1)
			start := time.Now()
			b.start(t, delivery.Config{MaxAttempts: c.max, Interval: time.Second})
			rows := b.waitSettled(t, 10*time.Second)
			require.Len(t, rows, 1)
			require.Equal(t, c.status, rows[0].Status)
			require.Equal(t, c.attempts, rows[0].Attempts, "counted attempts")
			require.Equal(t, c.requests, rows[0].Requests, "requests")
			require.Equal(t, c.reason, rows[0].Reason)
			require.False(t, rows[0].Leased)
			seen := b.recv.seen()
			require.Len(t, seen, c.requests)
			for i, s := range seen {
				require.Equal(t, i+1, s.attempt, "X-Attempt counts requests")
				require.Equal(t, "thing.happened:agg-1:1", s.key, "the key is stable across attempts")
			}
			if c.name == "429 Retry-After 1 does not spend the budget" {
				require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After honoured")
			}
			var attemptRows int
			require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM kit_outbox_attempts`).Scan(context.Background(), &attemptRows))
			require.Equal(t, c.requests, attemptRows, "one attempt row per request")
		})
	}
}

func TestAggregatesAreDeliveredInSequence(t *testing.T) {
	t.Parallel()
	// The first event of agg-a fails twice: agg-a's later events must wait, agg-b not.
	b := setup(t, status(503), status(503))
	for seq := int64(1); seq <= 3; seq++ {
		b.enqueue(t, "agg-a", seq)
	}
	for seq := int64(1); seq <= 3; seq++ {
		b.enqueue(t, "agg-b", seq)
	}
	b.start(t, delivery.Config{Concurrency: 4})
	rows := b.waitSettled(t, 10*time.Second)
	for _, r := range rows {
		require.Equal(t, outbox.StatusDelivered, r.Status)
	}
	last := map[string]int64{}
	for _, s := range b.recv.seen() {
		agg := s.envelope.Data
		var data struct {
			Aggregate string `json:"aggregate"`
			Seq       int64  `json:"seq"`
		}
		require.NoError(t, json.Unmarshal(agg, &data))
		require.GreaterOrEqual(t, data.Seq, last[data.Aggregate], "sequence never goes back within an aggregate")
		require.LessOrEqual(t, data.Seq, last[data.Aggregate]+1, "no event overtakes an undelivered one")
		last[data.Aggregate] = data.Seq
		require.Equal(t, data.Seq, s.envelope.Sequence)
	}
}

func TestDeadHeadBlocksOnlyItsAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, status(400))
	b.enqueue(t, "agg-a", 1)
	b.start(t, delivery.Config{})
	b.waitSettled(t, 5*time.Second)
	b.enqueue(t, "agg-a", 2)
	b.enqueue(t, "agg-b", 1)
	b.observed.wait(t, 5*time.Second, "agg-b/1 delivered", func(h *history) bool {
		return h.count(func(s settlement) bool { return s.rec.AggregateKey == "agg-b" && isFinal(s) }) == 1
	})
	rows := b.rows(t)
	require.Len(t, rows, 3)
	require.Equal(t, []string{"failed", "pending", "delivered"}, []string{rows[0].Status, rows[1].Status, rows[2].Status},
		"agg-a/1 failed, agg-a/2 pending behind it, agg-b/1 delivered")
	require.Len(t, b.recv.seen(), 2, "the blocked event is never sent")
}

func TestReplicasDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const aggregates, perAggregate = 250, 4
	events := make([]outbox.Event, 0, aggregates*perAggregate)
	for a := range aggregates {
		for s := 1; s <= perAggregate; s++ {
			agg := fmt.Sprintf("agg-%03d", a)
			events = append(events, outbox.Event{Type: "thing.happened", AggregateKey: agg, Sequence: int64(s),
				IdempotencyKey: fmt.Sprintf("%s:%d", agg, s), Destination: b.url, Payload: map[string]any{"aggregate": agg, "seq": s}})
		}
	}
	ctx := context.Background()
	require.NoError(t, b.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, ev := range events {
			if _, err := b.store.Enqueue(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	}))
	for i := range 3 {
		b.start(t, delivery.Config{Owner: fmt.Sprintf("replica-%d", i), Concurrency: 8, Batch: 50})
	}
	b.waitSettled(t, 60*time.Second)
	seen := b.recv.seen()
	require.Len(t, seen, len(events), "each event sent exactly once")
	count := map[string]int{}
	last := map[string]int64{}
	for _, s := range seen {
		count[s.key]++
		var data struct {
			Aggregate string `json:"aggregate"`
		}
		require.NoError(t, json.Unmarshal(s.envelope.Data, &data))
		require.Equal(t, last[data.Aggregate]+1, s.envelope.Sequence, "per-aggregate order")
		last[data.Aggregate] = s.envelope.Sequence
	}
	for k, n := range count {
		require.Equal(t, 1, n, k)
	}
}

func TestLateWorkerCannotOverwriteANewerLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, "agg-1", 1)
	ctx := context.Background()
	// A zero lease has lapsed by the next statement's now().
	first, err := b.store.Claim(ctx, b.db, "slow", 10, 0)
	require.NoError(t, err)
	require.Len(t, first, 1)
	second, err := b.store.Claim(ctx, b.db, "fast", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1, "an expired lease is claimed again")
	require.NoError(t, b.store.Settle(ctx, b.db, second[0], outbox.Outcome{Status: outbox.StatusDelivered, Counted: true, Sent: true, StartedAt: time.Now(), Label: "delivered"}))
	err = b.store.Settle(ctx, b.db, first[0], outbox.Outcome{Status: outbox.StatusFailed, Counted: true, Sent: true, StartedAt: time.Now(), Label: "dead_letter", FailedReason: "x"})
	require.ErrorIs(t, err, outbox.ErrLeaseLost)
	rows := b.rows(t)
	require.Equal(t, outbox.StatusDelivered, rows[0].Status)
	require.Equal(t, 1, rows[0].Requests)
}
