package e2e_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// receiverTimeout is the dispatcher's default DISPATCH_TIMEOUT, which the slow-receiver
// scenarios run with: longer than the 5 s an attempt once had to be settled in.
const receiverTimeout = 10 * time.Second

// defaultPatience puts DISPATCH_TIMEOUT and DISPATCH_LEASE back to their defaults.
var defaultPatience = map[string]string{"DISPATCH_TIMEOUT": receiverTimeout.String(), "DISPATCH_LEASE": "30s"}

// slowAnswer is how long the slow 2xx scenario holds a request: past the old 5 s
// settle window, within receiverTimeout.
const slowAnswer = 6 * time.Second

// slowReceiver is a gateway in front of logistics that holds each request for the
// delay set when it arrived, then passes it on. A request the dispatcher gives up on
// while held never reaches logistics. Unlike the fault proxy it never cuts a
// connection when the delay changes, so every held request either outlasts the
// dispatcher's timeout or is answered after its full delay.
type slowReceiver struct {
	*gateway
	delay     atomic.Int64 // a time.Duration; 0 passes requests straight on
	held      atomic.Int64
	abandoned atomic.Int64
}

func newSlowReceiver(t *testing.T) *slowReceiver {
	t.Helper()
	s := &slowReceiver{}
	s.gateway = newGateway(t, func(_ http.ResponseWriter, r *http.Request, g *gateway) bool {
		d := time.Duration(s.delay.Load())
		if d == 0 {
			return false
		}
		s.held.Add(1)
		wait := time.NewTimer(d)
		defer wait.Stop()
		select {
		case <-wait.C:
			return false
		case <-r.Context().Done():
			s.abandoned.Add(1)
		case <-g.released:
		}
		return true
	})
	return s
}

// holdNowAndThen makes s hold the requests arriving in the second and fourth fifths of
// the payment stream for d, and pass the others straight on; it returns how many
// requests were held.
func holdNowAndThen(s *slowReceiver, d time.Duration, stop <-chan struct{}) (int, error) {
	holding := false
	_, err := every(streamDuration()/5, stop, func() error {
		holding = !holding
		if holding {
			s.delay.Store(int64(d))
		} else {
			s.delay.Store(0)
		}
		return nil
	})
	s.delay.Store(0)
	return int(s.held.Load()), err
}

// checkEveryRequestSettled proves that every request the receiver saw was settled,
// once: finance counted as many requests as arrived, and logistics never saw a key
// twice (a held request reaches it at most once, and nothing else is lost).
func checkEveryRequestSettled(t *testing.T, env *harness.Env, s *slowReceiver) {
	t.Helper()
	require.EqualValues(t, s.single.Load()+s.batches.Load(),
		query[int](t, env.FinanceDB, `SELECT coalesce(sum(request_count), 0)::int FROM finance_outbox`),
		"finance recorded every request the receiver saw")
	require.Zero(t, strings.Count(env.Logistics.Log(), `"duplicate":true`), "no event was sent again after logistics applied it")
}

// checkHangs: every request the dispatcher gave up on is an attempt settled as a
// timeout that waited the whole DISPATCH_TIMEOUT.
func checkHangs(t *testing.T, env *harness.Env, s *slowReceiver) {
	t.Helper()
	checkEveryRequestSettled(t, env, s)
	require.Positive(t, s.abandoned.Load(), "some requests hung past the timeout")
	require.EqualValues(t, s.abandoned.Load(), query[int](t, env.FinanceDB,
		`SELECT count(*) FROM finance_outbox_attempts WHERE error_class = 'timeout'`),
		"each hung request is one attempt settled as a timeout")
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts
		WHERE error_class = 'timeout' AND duration_ms < $1`, receiverTimeout.Milliseconds()),
		"a timeout waited the whole DISPATCH_TIMEOUT")
}

// checkSlowAnswers: every held request is an attempt settled as a 2xx that took at
// least slowAnswer, and an event delivered by its first request was sent once.
func checkSlowAnswers(t *testing.T, env *harness.Env, s *slowReceiver) {
	t.Helper()
	checkEveryRequestSettled(t, env, s)
	require.Positive(t, s.held.Load(), "some requests were answered slowly")
	require.Zero(t, s.abandoned.Load(), "the dispatcher waited for every slow answer")
	require.EqualValues(t, s.held.Load(), query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox_attempts
		WHERE status_code BETWEEN 200 AND 299 AND duration_ms >= $1`, slowAnswer.Milliseconds()),
		"each slow answer is one attempt settled as a 2xx")
	require.Zero(t, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox o
		JOIN finance_outbox_attempts a ON a.outbox_id = o.id
		WHERE a.attempt_no = 1 AND a.duration_ms >= $1 AND o.request_count <> 1`, slowAnswer.Milliseconds()),
		"an event whose first request was answered slowly was sent once")
}
