package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/backoff"
	"handoff/pkg/integrationkit/breaker"
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

// bundle is one test's outbox in a database of its own, the receiver its events go to
// and what the dispatchers it runs report.
type bundle struct {
	db    *bun.DB
	dbURL string
	store *outbox.Store
	// recv is the scripted receiver of setup; nil when the test serves its own.
	recv *receiver
	url  string
	// observed hears every dispatcher the bundle runs.
	observed *observed
}

// newBundle is an empty outbox with no receiver yet: the test serves its own.
func newBundle(t *testing.T) *bundle {
	t.Helper()
	db, dbURL, store := outboxtest.Setup(t)
	return &bundle{db: db, dbURL: dbURL, store: store, observed: newObserved()}
}

// setup is an empty outbox whose events go to a scripted receiver answering script.
func setup(t *testing.T, script ...func(w http.ResponseWriter)) *bundle {
	t.Helper()
	b := newBundle(t)
	b.recv = &receiver{script: script, verifier: webhook.NewVerifier([][]byte{secret})}
	b.serve(t, b.recv)
	return b
}

// serve points b's events at a receiver running h instead of the scripted one.
func (b *bundle) serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return srv
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

// enqueueEach writes, for each key, an event of its own aggregate to dest, the key
// its idempotency key.
func (b *bundle) enqueueEach(t *testing.T, dest string, keys []string) {
	t.Helper()
	for _, key := range keys {
		_, err := b.store.Enqueue(context.Background(), b.db, outbox.Event{Type: "thing.happened", AggregateKey: key,
			Sequence: 1, IdempotencyKey: key, Destination: dest, Payload: map[string]string{"key": key}})
		require.NoError(t, err)
	}
}

// keys is prefix-0 … prefix-(n-1).
func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// enqueueAggregates writes perAggregate events, in sequence, of each of aggregates
// aggregates agg-000 …, in one transaction; an event's key is its aggregate and its
// sequence.
func (b *bundle) enqueueAggregates(t *testing.T, aggregates, perAggregate int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for a := range aggregates {
			agg := fmt.Sprintf("agg-%03d", a)
			for s := 1; s <= perAggregate; s++ {
				if _, err := b.store.Enqueue(ctx, tx, outbox.Event{Type: "thing.happened", AggregateKey: agg,
					Sequence: int64(s), IdempotencyKey: fmt.Sprintf("%s:%d", agg, s), Destination: b.url,
					Payload: map[string]any{"aggregate": agg, "seq": s}}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// start runs a dispatcher retrying after 20 ms (unless cfg says otherwise), logging
// its errors, until the test ends.
func (b *bundle) start(t *testing.T, cfg delivery.Config) {
	t.Helper()
	if len(cfg.Backoff) == 0 {
		cfg.Backoff = backoff.Schedule{20 * time.Millisecond}
	}
	b.runWith(t, cfg, delivery.Deps{Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
}

// runWith runs a dispatcher over b's outbox with deps until the test ends, or until
// stop, which returns Run's error once it returned.
func (b *bundle) runWith(t *testing.T, cfg delivery.Config, deps delivery.Deps) (stop func() error) {
	t.Helper()
	return b.run(t, []delivery.Config{cfg}, deps)
}

// replicas runs n dispatchers, owners replica-0 …, as runWith does; stop stops them
// all at once.
func (b *bundle) replicas(t *testing.T, n int, cfg delivery.Config, deps delivery.Deps) (stop func() error) {
	t.Helper()
	cfgs := make([]delivery.Config, n)
	for i := range cfgs {
		cfgs[i] = cfg
		cfgs[i].Owner = fmt.Sprintf("replica-%d", i)
	}
	return b.run(t, cfgs, deps)
}

// run runs a dispatcher of each config. deps defaults to a silent log and the
// loopback guard, and its observer is told besides b.observed.
func (b *bundle) run(t *testing.T, cfgs []delivery.Config, deps delivery.Deps) (stop func() error) {
	t.Helper()
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Guard == nil {
		deps.Guard = loopback(t)
	}
	if deps.Observer == nil {
		deps.Observer = b.observed
	} else {
		deps.Observer = delivery.Observers{deps.Observer, b.observed}
	}
	ds := make([]*delivery.Dispatcher, len(cfgs))
	for i, cfg := range cfgs {
		var err error
		ds[i], err = delivery.New(b.db, b.store, webhook.NewSigner([][]byte{secret}), cfg, deps)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, len(ds))
	for _, d := range ds {
		go func() { errs <- d.Run(ctx) }()
	}
	stop = sync.OnceValue(func() error {
		cancel()
		var err error
		for range ds {
			if e := <-errs; e != nil {
				err = e
			}
		}
		return err
	})
	t.Cleanup(func() { require.NoError(t, stop()) })
	return stop
}

// newBreaker creates the breakers' table kit_breakers in b's database and returns a
// breaker of cfg over it.
func (b *bundle) newBreaker(t *testing.T, cfg breaker.Config) *breaker.Breaker {
	t.Helper()
	_, err := b.db.ExecContext(context.Background(), breaker.Schema("kit_breakers"))
	require.NoError(t, err)
	cfg.Table = "kit_breakers"
	br, err := breaker.New(cfg)
	require.NoError(t, err)
	return br
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

// count is how many events match where.
func (b *bundle) count(t *testing.T, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM kit_outbox WHERE `+where, args...).Scan(context.Background(), &n))
	return n
}

// attempt is one row of the attempt log.
type attempt struct {
	Class      string `bun:"error_class"`
	Error      string `bun:"error"`
	Code       int    `bun:"status_code"`
	DurationMS int64  `bun:"duration_ms"`
	Snippet    string `bun:"response_snippet"`
}

func (b *bundle) attempts(t *testing.T) []attempt {
	t.Helper()
	var out []attempt
	require.NoError(t, b.db.NewRaw(`SELECT coalesce(error_class, '') AS error_class, coalesce(error, '') AS error,
		coalesce(status_code, 0) AS status_code, duration_ms, coalesce(response_snippet, '') AS response_snippet
		FROM kit_outbox_attempts ORDER BY id`).Scan(context.Background(), &out))
	return out
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

// eachMode runs test once per delivery mode, as parallel subtests named by the mode.
func eachMode(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{delivery.ModeSingle, delivery.ModeBatch} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			test(t, mode)
		})
	}
}
