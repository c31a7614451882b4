package inbox_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

var schema = fstest.MapFS{
	"000001_init.up.sql": {Data: []byte(inbox.Schema("test_inbox") + `
-- a column of the consumer's own, filled through Item.Columns
ALTER TABLE test_inbox ADD COLUMN note text;
CREATE TABLE effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL);`)},
	"000001_init.down.sql": {Data: []byte(`DROP TABLE effects; DROP TABLE test_inbox;`)},
}

// The inbox's contract (a key applied once, duplicates, key reuse, rollback,
// concurrent copies, prior hashes) is the conformance suite's, which
// conformance_test.go runs on this schema; the tests here hold what the suite leaves
// to the inbox itself.

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
	return func(ctx context.Context, r pgdb.Runner) (string, error) {
		return result, r.Queue(ctx, "record the effect", `INSERT INTO effects (key) VALUES ($1)`, key)
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
		_, err := b.in.Process(ctx, b.db, it, func(context.Context, pgdb.Runner) (string, error) {
			close(inApply)
			<-release
			return "", failed
		})
		firstDone <- err
	}()
	select {
	case <-inApply:
	case err := <-firstDone:
		t.Fatalf("the first request ended before its apply: %v", err)
	}

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
