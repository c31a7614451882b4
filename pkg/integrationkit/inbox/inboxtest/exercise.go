// Package inboxtest is the inbox's conformance suite: Exercise runs the idempotent
// consumer's contract against an adopter's own migrated inbox table.
package inboxtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// effects is the table the suite's apply functions write to, so that a test sees
// whether a business change was applied, kept or rolled back with its record.
const effects = "inboxtest_effects"

// Exercise runs the inbox's contract as subtests against an adopter's real table:
// newDB gives each subtest a database of its own holding table, empty and migrated as
// the adopter migrates it, and Exercise processes items there through inbox.Inbox.
// columns gives the Item.Columns the adopter stores with a key (nil when it stores
// none); it must name the same columns for every key, with values its table accepts.
// Exercise adds a table inboxtest_effects of its own to each database.
//
// It pins what a consumer relies on: a key is applied once, in the transaction of its
// record; a copy with the same payload hash is a duplicate answering the stored
// result, one with another hash is inbox.ErrKeyReuse, and a record of an earlier
// hash form matches through Item.PriorHashes; an apply error leaves neither record
// nor change; concurrent copies apply once; ProcessBatch answers each item as Process
// would alone, and its rejected items leave no record.
func Exercise(t *testing.T, newDB func(t *testing.T) *bun.DB, table string, columns func(key string) map[string]any) {
	t.Helper()
	if columns == nil {
		columns = func(string) map[string]any { return nil }
	}
	setup := func(t *testing.T) *suite {
		t.Helper()
		in, err := inbox.New(table)
		require.NoError(t, err)
		s := &suite{ctx: context.Background(), db: newDB(t), in: in, table: table, columns: columns}
		_, err = s.db.NewRaw(`CREATE TABLE ? (key text NOT NULL)`, bun.Ident(effects)).Exec(s.ctx)
		require.NoError(t, err)
		return s
	}
	pgtest.RunParallel(t, setup, []pgtest.Case[*suite]{
		{Name: "ProcessAppliesEachKeyOnce", Run: exerciseOnce},
		{Name: "DuplicateAnswersTheStoredResult", Run: exerciseResult},
		{Name: "PriorHashesMatchAnEarlierForm", Run: exercisePriorHashes},
		{Name: "ApplyErrorLeavesNoRecord", Run: exerciseApplyError},
		{Name: "ConcurrentCopiesApplyOnce", Run: exerciseConcurrent},
		{Name: "ProcessTxUndoesOnlyTheFailingItem", Run: exerciseProcessTx},
		{Name: "ProcessBatchAnswersEachItemAsAlone", Run: exerciseBatch},
		{Name: "InvalidItemsAreRefused", Run: exerciseInvalid},
	})
}

// suite is one subtest's database and inbox.
type suite struct {
	ctx     context.Context
	db      *bun.DB
	in      *inbox.Inbox
	table   string
	columns func(key string) map[string]any
}

// item is key's request with payload, and the adopter's columns.
func (s *suite) item(t *testing.T, key, payload string) inbox.Item {
	t.Helper()
	h, err := inbox.HashJSON([]byte(payload))
	require.NoError(t, err)
	return inbox.Item{Key: key, PayloadHash: h, Columns: s.columns(key)}
}

// effect is an ApplyFunc that records one effect row for key and returns result. The
// row is queued: under Process it goes with the COMMIT.
func effect(key, result string) inbox.ApplyFunc {
	return func(ctx context.Context, r pgdb.Runner) (string, error) {
		return result, r.Queue(ctx, "record the effect", `INSERT INTO `+effects+` (key) VALUES ($1)`, key)
	}
}

// never is an ApplyFunc for a copy that must not be applied.
func never(t *testing.T) inbox.ApplyFunc {
	return func(context.Context, pgdb.Runner) (string, error) {
		t.Error("apply ran for an item that is not fresh")
		return "", nil
	}
}

// effectsOf counts the effect rows of key.
func (s *suite) effectsOf(t *testing.T, key string) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.NewRaw(`SELECT count(*) FROM ? WHERE key = ?`, bun.Ident(effects), key).Scan(s.ctx, &n))
	return n
}

// records counts the inbox records of key.
func (s *suite) records(t *testing.T, key string) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.NewRaw(`SELECT count(*) FROM ? WHERE idempotency_key = ?`,
		bun.Ident(s.table), key).Scan(s.ctx, &n))
	return n
}

// stored counts the inbox records of it as it came: its key, its payload hash and
// the adopter's columns with their values.
func (s *suite) stored(t *testing.T, it inbox.Item) int64 {
	t.Helper()
	q := s.db.NewSelect().TableExpr("?", bun.Ident(s.table)).
		Where("idempotency_key = ?", it.Key).Where("payload_hash = ?", it.PayloadHash)
	for col, v := range it.Columns {
		q = q.Where("? IS NOT DISTINCT FROM ?", bun.Ident(col), v)
	}
	n, err := q.Count(s.ctx)
	require.NoError(t, err)
	return n
}

// process runs Process and requires it to succeed.
func (s *suite) process(t *testing.T, it inbox.Item, apply inbox.ApplyFunc) inbox.Outcome {
	t.Helper()
	out, err := s.in.Process(s.ctx, s.db, it, apply)
	require.NoError(t, err)
	return out
}
