package signin_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/finance/internal/signin"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	ctx   context.Context
	db    *bun.DB
	store *signin.Store
}

func setup(t *testing.T, cfg signin.Config) *bundle {
	t.Helper()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	store, err := signin.New(db, cfg)
	require.NoError(t, err)
	return &bundle{ctx: context.Background(), db: db, store: store}
}

// fail makes n failed attempts of client.
func (b *bundle) fail(t *testing.T, client string, n int) {
	t.Helper()
	for i := range n {
		_, err := b.store.Admit(b.ctx, client)
		require.NoError(t, err, "attempt %d of %s", i+1, client)
	}
}

func (b *bundle) throttled(t *testing.T, client string) *signin.ThrottledError {
	t.Helper()
	_, err := b.store.Admit(b.ctx, client)
	var th *signin.ThrottledError
	require.ErrorAs(t, err, &th, client)
	return th
}

// age moves every recorded attempt back by d, as the database's clock would.
func (b *bundle) age(t *testing.T, d time.Duration) {
	t.Helper()
	_, err := b.db.NewRaw(`UPDATE finance_dashboard_sign_in_attempts SET attempted_at = attempted_at - make_interval(secs => ?)`,
		d.Seconds()).Exec(b.ctx)
	require.NoError(t, err)
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	cases := map[string]signin.Config{
		"PerClient": {PerClient: 0, Global: 10, Window: time.Minute},
		"Global":    {PerClient: 20, Global: 10, Window: time.Minute},
		"Window":    {PerClient: 1, Global: 1, Window: time.Millisecond},
	}
	for field, cfg := range cases {
		require.ErrorContains(t, cfg.Validate(), field)
	}
	require.NoError(t, signin.Config{PerClient: 1, Global: 1, Window: time.Second}.Validate())
	_, err := signin.New(nil, signin.Config{})
	require.ErrorContains(t, err, "DB")
}

func TestAClientIsThrottledAfterItsFailuresInTheWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, signin.Config{})
	b.fail(t, "203.0.113.7", signin.DefaultPerClient)
	th := b.throttled(t, "203.0.113.7")
	require.False(t, th.Everyone)
	require.InDelta(t, time.Minute.Seconds(), th.RetryAfter.Seconds(), 2)
	b.fail(t, "203.0.113.8", 1) // another address is not throttled by these

	b.age(t, 50*time.Second)
	th = b.throttled(t, "203.0.113.7")
	require.InDelta(t, 10, th.RetryAfter.Seconds(), 2, "the oldest failure leaves the window in about 10 s")
	b.age(t, 11*time.Second)
	b.fail(t, "203.0.113.7", 1)
	var left int
	require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM finance_dashboard_sign_in_attempts`).Scan(b.ctx, &left))
	require.Equal(t, 1, left, "attempts out of the window are deleted")
}

func TestACorrectTokenIsNoFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, signin.Config{PerClient: 3})
	b.fail(t, "203.0.113.7", 2)
	a, err := b.store.Admit(b.ctx, "203.0.113.7")
	require.NoError(t, err)
	require.NoError(t, b.store.Start(b.ctx, a, "session-value", "ops:alice", time.Hour))
	b.fail(t, "203.0.113.7", 1)
	_ = b.throttled(t, "203.0.113.7")
}

func TestTheGlobalCeilingRefusesEveryone(t *testing.T) {
	t.Parallel()
	b := setup(t, signin.Config{PerClient: 2, Global: 5})
	b.fail(t, "192.0.2.1", 2)
	b.fail(t, "192.0.2.2", 2)
	b.fail(t, "192.0.2.3", 1)
	th := b.throttled(t, "192.0.2.4")
	require.True(t, th.Everyone)
	require.InDelta(t, time.Minute.Seconds(), th.RetryAfter.Seconds(), 2)
	require.False(t, b.throttled(t, "192.0.2.1").Everyone, "a client past its own limit is told so")
}

func TestClientsAreCountedByAddressOrIPv6Network(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		fail, same, other string
	}{
		{"IPv4", "192.0.2.1", "192.0.2.1", "192.0.2.2"},
		{"IPv4 mapped into IPv6", "::ffff:192.0.2.1", "192.0.2.1", "192.0.2.2"},
		{"IPv6 by /64", "2001:db8:0:1::1", "2001:db8:0:1:ffff::2", "2001:db8:0:2::1"},
		{"not an address", "unix", "unix", "192.0.2.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, signin.Config{PerClient: 1})
			b.fail(t, tc.fail, 1)
			_ = b.throttled(t, tc.same)
			b.fail(t, tc.other, 1)
		})
	}
}

func TestConcurrentGuessesCannotPassAClientsLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, signin.Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, throttled := 0, 0
	for range 3 * signin.DefaultPerClient {
		wg.Go(func() {
			_, err := b.store.Admit(b.ctx, "203.0.113.7")
			var th *signin.ThrottledError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case errors.As(err, &th):
				throttled++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, signin.DefaultPerClient, admitted)
	require.Equal(t, 2*signin.DefaultPerClient, throttled)
}

func TestSessionsLiveUntilTheyEndOrExpire(t *testing.T) {
	t.Parallel()
	b := setup(t, signin.Config{})
	start := func(value string) {
		t.Helper()
		a, err := b.store.Admit(b.ctx, "127.0.0.1")
		require.NoError(t, err)
		require.NoError(t, b.store.Start(b.ctx, a, value, "ops:alice", time.Hour))
	}
	active := func(value string) bool {
		t.Helper()
		live, err := b.store.Active(b.ctx, value)
		require.NoError(t, err)
		return live
	}
	start("s2.one")
	start("s2.two")
	require.True(t, active("s2.one"))
	require.False(t, active("s2.never-started"))

	require.NoError(t, b.store.End(b.ctx, "s2.one"))
	require.False(t, active("s2.one"), "ended")
	require.True(t, active("s2.two"), "only that one")
	require.NoError(t, b.store.End(b.ctx, "s2.one"), "ending twice is fine")

	_, err := b.db.NewRaw(`UPDATE finance_dashboard_sessions SET expires_at = now()`).Exec(b.ctx)
	require.NoError(t, err)
	require.False(t, active("s2.two"), "expired by the database's clock")

	start("s2.three")
	var rows []struct {
		Hash      []byte `bun:"session_hash"`
		Principal string `bun:"principal"`
	}
	require.NoError(t, b.db.NewRaw(`SELECT session_hash, principal FROM finance_dashboard_sessions`).Scan(b.ctx, &rows))
	require.Len(t, rows, 1, "a sign-in deletes expired sessions")
	require.Equal(t, "ops:alice", rows[0].Principal)
	require.NotContains(t, string(rows[0].Hash), "s2.three", "the table holds a digest, not the value")
}
