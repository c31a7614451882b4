package inboxtest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
)

// batchEffects is a BatchApplyFunc that records one effect row per fresh item, except
// for the keys in reject, which it refuses with their error.
func batchEffects(items []inbox.Item, reject map[string]error) inbox.BatchApplyFunc {
	return func(ctx context.Context, tx bun.Tx, fresh []int) ([]inbox.ItemResult, error) {
		out := make([]inbox.ItemResult, len(fresh))
		for j, i := range fresh {
			key := items[i].Key
			if err := reject[key]; err != nil {
				out[j].Err = err
				continue
			}
			if key == "stale" {
				out[j].Result = "stale"
			}
			if _, err := effect(key, "")(ctx, pgdb.Prepared(tx)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// A batch answers each item as Process would alone: fresh keys applied by one call,
// stored keys duplicates or reused, a repeat judged against its first occurrence;
// a rejected item leaves no record, so its key is free for a later delivery.
func exerciseBatch(t *testing.T, s *suite) {
	s.process(t, s.item(t, "dup", `{}`), effect("dup", "stale"))
	s.process(t, s.item(t, "reused", `{"a":1}`), effect("reused", ""))
	notYet := errors.New("not yet")
	items := []inbox.Item{
		s.item(t, "fresh", `{}`), s.item(t, "dup", `{}`), s.item(t, "reused", `{"a":2}`), s.item(t, "later", `{}`),
		s.item(t, "fresh", `{ }`), s.item(t, "fresh", `{"b":1}`), s.item(t, "stale", `{}`), s.item(t, "later", `{}`),
	}
	var fresh []int
	apply := batchEffects(items, map[string]error{"later": notYet})
	outs, err := s.in.ProcessBatch(s.ctx, s.db, items, func(ctx context.Context, tx bun.Tx, f []int) ([]inbox.ItemResult, error) {
		fresh = f
		return apply(ctx, tx, f)
	})
	require.NoError(t, err)
	require.Equal(t, []int{0, 3, 6}, fresh, "apply sees each fresh key once, in request order")

	require.Len(t, outs, len(items))
	require.Equal(t, inbox.BatchOutcome{Outcome: inbox.Outcome{Result: inbox.ResultApplied}}, outs[0])
	require.Equal(t, inbox.BatchOutcome{Outcome: inbox.Outcome{Duplicate: true, Result: "stale"}}, outs[1])
	require.ErrorIs(t, outs[2].Err, inbox.ErrKeyReuse)
	require.ErrorIs(t, outs[3].Err, notYet)
	require.Equal(t, inbox.BatchOutcome{Outcome: inbox.Outcome{Duplicate: true, Result: inbox.ResultApplied}}, outs[4],
		"a repeat in the batch is a duplicate of the first")
	require.ErrorIs(t, outs[5].Err, inbox.ErrKeyReuse)
	require.Equal(t, inbox.BatchOutcome{Outcome: inbox.Outcome{Result: "stale"}}, outs[6])
	require.ErrorIs(t, outs[7].Err, notYet, "a repeat of a rejected item is rejected too")

	for key, n := range map[string]int{"fresh": 1, "dup": 1, "reused": 1, "stale": 1, "later": 0} {
		require.Equal(t, n, s.records(t, key), key)
		require.Equal(t, n, s.effectsOf(t, key), key)
	}
	out := s.process(t, s.item(t, "stale", `{}`), never(t))
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: "stale"}, out, "the batch stored the result")
	out = s.process(t, s.item(t, "later", `{}`), effect("later", ""))
	require.False(t, out.Duplicate, "a rejected key is processed afresh")
}
