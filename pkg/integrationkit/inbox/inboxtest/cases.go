package inboxtest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
)

// A key is applied once; a copy with the same content, however encoded, is a
// duplicate, one with other content a reused key, and neither applies anything.
func exerciseOnce(t *testing.T, s *suite) {
	first := s.item(t, "k1", `{"a":1,"b":[1,2]}`)
	out := s.process(t, first, effect("k1", ""))
	require.Equal(t, inbox.Outcome{Result: inbox.ResultApplied}, out)

	out = s.process(t, s.item(t, "k1", ` { "b" : [1, 2], "a": 1 }`), never(t))
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: inbox.ResultApplied}, out)

	_, err := s.in.Process(s.ctx, s.db, s.item(t, "k1", `{"a":2,"b":[1,2]}`), never(t))
	require.ErrorIs(t, err, inbox.ErrKeyReuse)

	require.Equal(t, 1, s.effectsOf(t, "k1"))
	require.Equal(t, 1, s.records(t, "k1"))
	require.EqualValues(t, 1, s.stored(t, first), "the record keeps the first copy's hash and columns")
}

// The result apply returns is stored and is what every duplicate answers.
func exerciseResult(t *testing.T, s *suite) {
	out := s.process(t, s.item(t, "k", `{}`), effect("k", "stale"))
	require.Equal(t, inbox.Outcome{Result: "stale"}, out)
	out = s.process(t, s.item(t, "k", `{}`), never(t))
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: "stale"}, out)
}

// A record stored under an earlier form of the hash is a duplicate of an item naming
// that form among its PriorHashes, alone or in a batch, and a reused key otherwise;
// the record keeps the hash it was stored with.
func exercisePriorHashes(t *testing.T, s *suite) {
	old := s.item(t, "k", `{"id":"m-1","v":1}`)
	s.process(t, old, effect("k", ""))

	it := s.item(t, "k", `{"v":1}`)
	for _, prior := range [][][]byte{nil, {s.item(t, "k", `{"id":"m-2","v":1}`).PayloadHash}} {
		it.PriorHashes = prior // none, or another message's form
		_, err := s.in.Process(s.ctx, s.db, it, never(t))
		require.ErrorIs(t, err, inbox.ErrKeyReuse)
		outs, err := s.in.ProcessBatch(s.ctx, s.db, []inbox.Item{it}, batchEffects([]inbox.Item{it}, nil))
		require.NoError(t, err)
		require.ErrorIs(t, outs[0].Err, inbox.ErrKeyReuse)
	}

	it.PriorHashes = [][]byte{s.item(t, "k", `{"id":"m-0"}`).PayloadHash, old.PayloadHash}
	out := s.process(t, it, never(t))
	require.Equal(t, inbox.Outcome{Duplicate: true, Result: inbox.ResultApplied}, out)
	outs, err := s.in.ProcessBatch(s.ctx, s.db, []inbox.Item{it}, batchEffects([]inbox.Item{it}, nil))
	require.NoError(t, err)
	require.Equal(t, []inbox.BatchOutcome{{Outcome: out}}, outs)
	require.Equal(t, 1, s.effectsOf(t, "k"))
	require.EqualValues(t, 1, s.stored(t, old), "the record keeps the hash it was stored with")
}

// An apply error rolls back the record with the change, so the key can be tried
// again and is then applied. The change is sent before the error (Exec, not Queue),
// so the rollback has something to undo.
func exerciseApplyError(t *testing.T, s *suite) {
	notYet := errors.New("not yet")
	_, err := s.in.Process(s.ctx, s.db, s.item(t, "k", `{}`), func(ctx context.Context, r pgdb.Runner) (string, error) {
		res, err := r.Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, "k")
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		return "", notYet
	})
	require.ErrorIs(t, err, notYet)
	require.Zero(t, s.records(t, "k"))
	require.Zero(t, s.effectsOf(t, "k"))

	out := s.process(t, s.item(t, "k", `{}`), effect("k", ""))
	require.False(t, out.Duplicate)
	require.Equal(t, 1, s.effectsOf(t, "k"))
}

// Identical requests at the same instant apply once; the others wait on the key and
// answer duplicate, never an error.
func exerciseConcurrent(t *testing.T, s *suite) {
	const n = 8
	it := s.item(t, "same", `{"x":1}`)
	start := make(chan struct{})
	outs := make([]inbox.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			outs[i], errs[i] = s.in.Process(s.ctx, s.db, it, effect("same", ""))
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
	require.Equal(t, 1, s.effectsOf(t, "same"))
}

// Inside the caller's transaction a failing item undoes only its own record and
// change; a key repeated in that transaction is a duplicate.
func exerciseProcessTx(t *testing.T, s *suite) {
	bad := errors.New("bad item")
	var outs []inbox.Outcome
	var errs []error
	err := s.db.RunInTx(s.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, key := range []string{"a", "b", "a"} {
			apply := effect(key, "")
			if key == "b" {
				apply = func(ctx context.Context, r pgdb.Runner) (string, error) {
					_, err := effect("b", "")(ctx, r)
					require.NoError(t, err)
					return "", bad
				}
			}
			out, err := s.in.ProcessTx(ctx, tx, s.item(t, key, `{}`), apply)
			outs, errs = append(outs, out), append(errs, err)
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], bad)
	require.NoError(t, errs[2])
	require.True(t, outs[2].Duplicate)
	require.Equal(t, 1, s.effectsOf(t, "a"))
	require.Zero(t, s.effectsOf(t, "b"))
	require.Zero(t, s.records(t, "b"))
}

// Items missing a key or hash are refused before anything is written.
func exerciseInvalid(t *testing.T, s *suite) {
	_, err := s.in.Process(s.ctx, s.db, inbox.Item{Key: "k"}, never(t))
	require.ErrorIs(t, err, inbox.ErrInvalidItem)
	_, err = s.in.ProcessBatch(s.ctx, s.db, []inbox.Item{s.item(t, "a", `{}`), {PayloadHash: []byte{1}}},
		func(context.Context, bun.Tx, []int) ([]inbox.ItemResult, error) {
			t.Error("apply ran for an invalid batch")
			return nil, nil
		})
	require.ErrorIs(t, err, inbox.ErrInvalidItem)
	require.Zero(t, s.records(t, "k"))
	require.Zero(t, s.records(t, "a"))
}
