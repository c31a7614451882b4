package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgtest"
)

var schema = fstest.MapFS{
	"000001_init.up.sql": {Data: []byte(inbox.Schema("test_inbox") + `
-- a column of the consumer's own, filled through Item.Columns
ALTER TABLE test_inbox ADD COLUMN note text;
CREATE TABLE effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL);`)},
	"000001_init.down.sql": {Data: []byte(`DROP TABLE effects; DROP TABLE test_inbox;`)},
}

type bundle struct {
	db *bun.DB
	in *inbox.Inbox
}

func setup(t *testing.T) bundle {
	t.Helper()
	db, _ := pgtest.NewDB(t, "inbox", schema)
	in, err := inbox.New("test_inbox")
	require.NoError(t, err)
	return bundle{db: db, in: in}
}

func item(t *testing.T, key, payload string) inbox.Item {
	t.Helper()
	h, err := inbox.HashJSON([]byte(payload))
	require.NoError(t, err)
	return inbox.Item{Key: key, PayloadHash: h, Columns: map[string]any{"note": "n-" + key}}
}

// effect is an ApplyFunc that records one row per application.
func effect(key, result string) inbox.ApplyFunc {
	return func(ctx context.Context, tx bun.Tx) (string, error) {
		_, err := tx.NewRaw(`INSERT INTO effects (key) VALUES (?)`, key).Exec(ctx)
		return result, err
	}
}

func count(t *testing.T, db bun.IDB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.NewRaw(query, args...).Scan(context.Background(), &n))
	return n
}

func TestNewRejectsUnsafeTableNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Inbox", "in box", "x; DROP TABLE y", "1abc"} {
		_, err := inbox.New(name)
		require.Error(t, err, name)
	}
}

func TestProcessAppliesOnceAndDetectsDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	out, err := b.in.Process(ctx, b.db, item(t, "k1", `{"a":1,"b":[1,2]}`), effect("k1", ""))
	require.NoError(t, err)
	require.Equal(t, inbox.Outcome{Result: inbox.ResultApplied}, out)

	// Same content, other key order and whitespace: a duplicate, nothing applied.
	out, err = b.in.Process(ctx, b.db, item(t, "k1", ` { "b" : [1, 2], "a": 1 }`), effect("k1", ""))
	require.NoError(t, err)
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: inbox.ResultApplied}, out)

	_, err = b.in.Process(ctx, b.db, item(t, "k1", `{"a":2,"b":[1,2]}`), effect("k1", ""))
	require.ErrorIs(t, err, inbox.ErrKeyReuse)

	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM effects`))
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE note = 'n-k1'`))
}

func TestProcessStoresTheResultAndReturnsItForDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	out, err := b.in.Process(ctx, b.db, item(t, "k", `{}`), effect("k", "stale"))
	require.NoError(t, err)
	require.Equal(t, inbox.Outcome{Result: "stale"}, out)

	out, err = b.in.Process(ctx, b.db, item(t, "k", `{}`), effect("k", "other"))
	require.NoError(t, err)
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: "stale"}, out)
}

func TestProcessRollsBackTheRecordWhenApplyFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	notYet := errors.New("not yet")

	_, err := b.in.Process(ctx, b.db, item(t, "k", `{}`), func(ctx context.Context, tx bun.Tx) (string, error) {
		_, err := effect("k", "")(ctx, tx)
		require.NoError(t, err)
		return "", notYet
	})
	require.ErrorIs(t, err, notYet)
	require.Equal(t, 0, count(t, b.db, `SELECT count(*) FROM test_inbox`))
	require.Equal(t, 0, count(t, b.db, `SELECT count(*) FROM effects`))

	out, err := b.in.Process(ctx, b.db, item(t, "k", `{}`), effect("k", ""))
	require.NoError(t, err)
	require.False(t, out.Duplicate)
}

func TestProcessRejectsInvalidItems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for name, it := range map[string]inbox.Item{
		"no key":         {PayloadHash: []byte{1}},
		"no hash":        {Key: "k"},
		"unsafe column":  {Key: "k", PayloadHash: []byte{1}, Columns: map[string]any{"note; --": 1}},
		"core column":    {Key: "k", PayloadHash: []byte{1}, Columns: map[string]any{"result": "x"}},
		"uppercase name": {Key: "k", PayloadHash: []byte{1}, Columns: map[string]any{"Note": "x"}},
	} {
		_, err := b.in.Process(ctx, b.db, it, effect("k", ""))
		require.ErrorIs(t, err, inbox.ErrInvalidItem, name)
	}
}

// Identical requests at the same instant, each in its own transaction, as many at
// once as the pool has connections: the first insert wins, the others wait on the
// primary key and then see a duplicate.
func TestProcessConcurrentIdenticalRequestsApplyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 24
	it := item(t, "same", `{"x":1}`)

	start := make(chan struct{})
	outs := make([]inbox.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			outs[i], errs[i] = b.in.Process(context.Background(), b.db, it, effect("same", ""))
		})
	}
	close(start)
	wg.Wait()

	applied := 0
	for i := range n {
		require.NoError(t, errs[i])
		if !outs[i].Duplicate {
			applied++
		}
	}
	require.Equal(t, 1, applied)
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM effects`))
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox`))
}

// A copy waiting behind a transaction that then rolls back proceeds and applies.
func TestProcessWaiterAppliesWhenTheFirstRollsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	it := item(t, "k", `{}`)
	release := make(chan struct{})
	failed := errors.New("first attempt fails")

	firstDone := make(chan error, 1)
	inApply := make(chan struct{})
	go func() {
		_, err := b.in.Process(ctx, b.db, it, func(ctx context.Context, tx bun.Tx) (string, error) {
			close(inApply)
			<-release
			return "", failed
		})
		firstDone <- err
	}()
	<-inApply

	type result struct {
		out inbox.Outcome
		err error
	}
	second := make(chan result, 1)
	go func() {
		out, err := b.in.Process(ctx, b.db, it, effect("k", ""))
		second <- result{out, err}
	}()
	require.Eventually(t, func() bool {
		return count(t, b.db, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 1
	}, 10*time.Second, 10*time.Millisecond, "second request never waited on the key")

	close(release)
	require.ErrorIs(t, <-firstDone, failed)
	got := <-second
	require.NoError(t, got.err)
	require.False(t, got.out.Duplicate)
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM effects`))
}

func TestProcessTxUndoesOnlyTheFailingItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	bad := errors.New("bad item")

	var outs []inbox.Outcome
	var errs []error
	err := b.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, key := range []string{"a", "b", "a", "c"} {
			apply := effect(key, "")
			if key == "b" {
				apply = func(ctx context.Context, tx bun.Tx) (string, error) {
					_, err := effect("b", "")(ctx, tx)
					require.NoError(t, err)
					return "", bad
				}
			}
			out, err := b.in.ProcessTx(ctx, tx, item(t, key, `{}`), apply)
			outs = append(outs, out)
			errs = append(errs, err)
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], bad)
	require.NoError(t, errs[2])
	require.True(t, outs[2].Duplicate, "the repeated key inside one batch is a duplicate")
	require.NoError(t, errs[3])
	require.Equal(t, 2, count(t, b.db, `SELECT count(*) FROM effects`))
	require.Equal(t, 0, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE idempotency_key = 'b'`))
}

// A record stored under an earlier form of the payload hash is a duplicate of an item
// that names that form among its PriorHashes, alone or in a batch, and a reused key
// otherwise; the record keeps the hash it was stored with.
func TestPriorHashesMatchRecordsOfAnEarlierForm(t *testing.T) {
	t.Parallel()
	const stored = `{"id":"m-1","v":1}` // the request in the form an earlier release hashed
	tests := map[string]struct {
		prior     []string
		duplicate bool
	}{
		"the stored form among them": {prior: []string{`{"id":"m-0","v":1}`, stored}, duplicate: true},
		"no prior hashes":            {},
		"another message's form":     {prior: []string{`{"id":"m-2","v":1}`}},
	}
	for name, tt := range tests {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, batch %v", name, batch), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				ctx := context.Background()
				old := item(t, "k", stored)
				_, err := b.in.Process(ctx, b.db, old, effect("k", ""))
				require.NoError(t, err)

				it := item(t, "k", `{"v":1}`)
				for _, p := range tt.prior {
					it.PriorHashes = append(it.PriorHashes, item(t, "k", p).PayloadHash)
				}
				var out inbox.Outcome
				if batch {
					outs, berr := b.in.ProcessBatch(ctx, b.db, []inbox.Item{it}, batchEffects([]inbox.Item{it}, nil, nil))
					require.NoError(t, berr)
					out, err = outs[0].Outcome, outs[0].Err
				} else {
					out, err = b.in.Process(ctx, b.db, it, effect("k", ""))
				}
				if tt.duplicate {
					require.NoError(t, err)
					require.Equal(t, inbox.Outcome{Duplicate: true, Result: inbox.ResultApplied}, out)
				} else {
					require.ErrorIs(t, err, inbox.ErrKeyReuse)
				}
				require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM effects`))
				require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE payload_hash = ?`, old.PayloadHash))
			})
		}
	}
}
