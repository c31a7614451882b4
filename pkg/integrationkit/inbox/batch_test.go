package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
)

// batchEffects is a BatchApplyFunc that records one effect row per fresh item in one
// statement; results give the stored result of some keys.
func batchEffects(items []inbox.Item, results map[string]string) inbox.BatchApplyFunc {
	return func(ctx context.Context, tx bun.Tx, fresh []int) ([]inbox.ItemResult, error) {
		out := make([]inbox.ItemResult, len(fresh))
		keys := make([]bun.TupleValues, len(fresh))
		for j, i := range fresh {
			key := items[i].Key
			out[j].Result = results[key]
			keys[j] = bun.Tuple([]any{key})
		}
		if len(keys) > 0 {
			if _, err := tx.NewRaw(`INSERT INTO effects (key) VALUES ?`, bun.List(keys)).Exec(ctx); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// A batch stores each fresh item's columns with its record, a nil value as NULL, and
// the result apply gave the item. (What a batch answers is the conformance suite's.)
func TestProcessBatchStoresColumnsAndResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noNote := item(t, "no-note", `{}`)
	noNote.Columns["note"] = nil
	items := []inbox.Item{item(t, "fresh", `{}`), item(t, "ignored", `{}`), noNote}
	outs, err := b.in.ProcessBatch(context.Background(), b.db, items, batchEffects(items, map[string]string{"ignored": "ignored"}))
	require.NoError(t, err)
	require.Equal(t, []inbox.BatchOutcome{
		{Outcome: inbox.Outcome{Result: inbox.ResultApplied}},
		{Outcome: inbox.Outcome{Result: "ignored"}},
		{Outcome: inbox.Outcome{Result: inbox.ResultApplied}},
	}, outs)

	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE idempotency_key = 'fresh' AND note = 'n-fresh'`))
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE idempotency_key = 'ignored' AND result = 'ignored'`))
	require.Equal(t, 1, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE idempotency_key = 'no-note' AND note IS NULL`))
	require.Equal(t, 3, count(t, b.db, `SELECT count(*) FROM test_inbox`))
	require.Equal(t, 3, count(t, b.db, `SELECT count(*) FROM effects`))
}

// Batches holding the same keys in different orders, at the same instant: keys are
// claimed in sorted order, so they queue instead of deadlocking, and each key is
// applied once.
func TestProcessBatchConcurrentOverlappingBatchesApplyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 24
	var items []inbox.Item
	for k := range 50 {
		items = append(items, item(t, fmt.Sprintf("k%02d", k), `{}`))
	}

	start := make(chan struct{})
	outs := make([][]inbox.BatchOutcome, n)
	batches := make([][]inbox.Item, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		batches[i] = make([]inbox.Item, len(items))
		for j, p := range rand.Perm(len(items)) {
			batches[i][j] = items[p]
		}
		wg.Go(func() {
			<-start
			outs[i], errs[i] = b.in.ProcessBatch(context.Background(), b.db, batches[i], batchEffects(batches[i], nil))
		})
	}
	close(start)
	wg.Wait()

	applied := map[string]int{}
	for i := range n {
		require.NoError(t, errs[i])
		for j, out := range outs[i] {
			require.NoError(t, out.Err)
			if !out.Duplicate {
				applied[batches[i][j].Key]++
			}
		}
	}
	require.Len(t, applied, len(items))
	for key, times := range applied {
		require.Equal(t, 1, times, key)
	}
	require.Equal(t, len(items), count(t, b.db, `SELECT count(*) FROM effects`))
}

func TestProcessBatchRetriesADeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	items := []inbox.Item{item(t, "a", `{}`), item(t, "b", `{}`)}
	calls := 0
	outs, err := b.in.ProcessBatch(ctx, b.db, items, func(ctx context.Context, tx bun.Tx, fresh []int) ([]inbox.ItemResult, error) {
		calls++
		if _, err := batchEffects(items, nil)(ctx, tx, fresh); err != nil {
			return nil, err
		}
		if calls == 1 {
			return nil, fmt.Errorf("apply: %w", &pgconn.PgError{Code: pgdb.CodeDeadlockDetected})
		}
		return make([]inbox.ItemResult, len(fresh)), nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, calls)
	for _, out := range outs {
		require.Equal(t, inbox.BatchOutcome{Outcome: inbox.Outcome{Result: inbox.ResultApplied}}, out)
	}
	require.Equal(t, 2, count(t, b.db, `SELECT count(*) FROM effects`))

	calls = 0
	failed := errors.New("broken")
	_, err = b.in.ProcessBatch(ctx, b.db, []inbox.Item{item(t, "c", `{}`)}, func(context.Context, bun.Tx, []int) ([]inbox.ItemResult, error) {
		calls++
		return nil, failed
	})
	require.ErrorIs(t, err, failed)
	require.Equal(t, 1, calls, "only serialization failures and deadlocks are retried")
	require.Equal(t, 0, count(t, b.db, `SELECT count(*) FROM test_inbox WHERE idempotency_key = 'c'`))
}

func TestProcessBatchRejectsInvalidItems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	never := func(context.Context, bun.Tx, []int) ([]inbox.ItemResult, error) {
		panic("apply must not run")
	}
	for name, items := range map[string][]inbox.Item{
		"no key":        {item(t, "a", `{}`), {PayloadHash: []byte{1}}},
		"other columns": {item(t, "a", `{}`), {Key: "b", PayloadHash: []byte{1}}},
	} {
		_, err := b.in.ProcessBatch(ctx, b.db, items, never)
		require.ErrorIs(t, err, inbox.ErrInvalidItem, name)
	}
	require.Equal(t, 0, count(t, b.db, `SELECT count(*) FROM test_inbox`))
}
