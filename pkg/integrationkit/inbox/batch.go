package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
)

// BatchRetries is how many times ProcessBatch runs a batch again after PostgreSQL
// aborted its transaction with a serialization failure or a deadlock.
const BatchRetries = 2

// ItemResult is what a BatchApplyFunc did with one fresh item.
type ItemResult struct {
	// Result is stored with the item's record; empty means ResultApplied.
	Result string
	// Err rejects the item: its record is removed in the same transaction, so a later
	// delivery of the key is processed afresh, and ProcessBatch reports Err for it.
	// The batch's other items are not affected; apply must have changed nothing for
	// a rejected item.
	Err error
}

// BatchApplyFunc makes the business changes of a batch's fresh items inside tx, all
// at once, and returns one ItemResult per element of fresh, in the same order. fresh
// holds indices into the items given to ProcessBatch, in request order, one per key:
// duplicates and reused keys are never passed. An error rolls back the whole batch.
// It may run more than once (see BatchRetries), so it must not act outside tx.
type BatchApplyFunc func(ctx context.Context, tx bun.Tx, fresh []int) ([]ItemResult, error)

// BatchOutcome is what ProcessBatch did with one item.
type BatchOutcome struct {
	Outcome
	// Err is set when the item was not applied and is not a duplicate: ErrKeyReuse
	// (wrapped), or the ItemResult.Err that rejected it. Nothing of it is stored.
	Err error
}

// ProcessBatch applies items in one transaction of its own, with a fixed number of
// statements whatever the batch size, and returns one outcome per item in order.
// Each item gets the outcome Process would give it alone: fresh keys are applied
// (by one call of apply), keys already stored are duplicates or ErrKeyReuse. A key
// repeated within the batch is judged against its first occurrence: another payload
// is ErrKeyReuse, the same payload gets the first occurrence's outcome, as a
// duplicate when that one succeeded.
//
// Keys are claimed in sorted order, so concurrent batches sharing keys queue behind
// one another instead of deadlocking; a serialization failure or deadlock caused by
// apply's own locks runs the whole batch again, up to BatchRetries times. Items must
// be valid and share one set of Columns; otherwise ErrInvalidItem is returned and
// nothing happens.
//
// Under a traced request the transaction, retries included, is an
// "inbox.process_batch" span of its trace.
func (in *Inbox) ProcessBatch(ctx context.Context, db *bun.DB, items []Item, apply BatchApplyFunc) (outs []BatchOutcome, err error) {
	if err := validateBatch(items); err != nil || len(items) == 0 {
		return nil, err
	}
	ctx, span := tracing.Child(ctx, tracerScope, "inbox.process_batch")
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(attribute.String("handoff.inbox.table", in.table),
				attribute.Int("messaging.batch.message_count", len(items)))
		}
		tracing.End(span, err)
	}()
	return in.processBatchTx(ctx, db, items, apply)
}

// processBatchTx runs the batch's transaction, again after a serialization failure
// or deadlock, up to BatchRetries times.
func (in *Inbox) processBatchTx(ctx context.Context, db *bun.DB, items []Item, apply BatchApplyFunc) ([]BatchOutcome, error) {
	for attempt := 0; ; attempt++ {
		var outs []BatchOutcome
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			outs, err = in.processBatch(ctx, tx, items, apply)
			return err
		})
		if err == nil {
			return outs, nil
		}
		if attempt == BatchRetries || !retryable(err) {
			return nil, err
		}
	}
}

func retryable(err error) bool {
	code := pgdb.Code(err)
	return code == pgdb.CodeSerializationFailure || code == pgdb.CodeDeadlockDetected
}

func validateBatch(items []Item) error {
	for i, it := range items {
		if err := it.validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if i > 0 && !slices.Equal(columnNames(it), columnNames(items[0])) {
			return fmt.Errorf("%w: item %d has other columns than item 0", ErrInvalidItem, i)
		}
	}
	return nil
}

func columnNames(it Item) []string { return slices.Sorted(maps.Keys(it.Columns)) }

func (in *Inbox) processBatch(ctx context.Context, tx bun.Tx, items []Item, apply BatchApplyFunc) ([]BatchOutcome, error) {
	first := firstOccurrences(items)
	inserted, err := in.insertBatch(ctx, tx, items, first)
	if err != nil {
		return nil, err
	}
	var conflicting []string
	for key := range first {
		if !inserted[key] {
			conflicting = append(conflicting, key)
		}
	}
	stored, err := in.records(ctx, tx, conflicting)
	if err != nil {
		return nil, err
	}
	var fresh []int
	for i, it := range items {
		if inserted[it.Key] && first[it.Key] == i {
			fresh = append(fresh, i)
		}
	}
	results, err := in.applyFresh(ctx, tx, items, fresh, apply)
	if err != nil {
		return nil, err
	}
	return outcomes(items, first, stored, results), nil
}

// firstOccurrences maps each key of items to the index of its first item.
func firstOccurrences(items []Item) map[string]int {
	first := make(map[string]int, len(items))
	for i, it := range items {
		if _, ok := first[it.Key]; !ok {
			first[it.Key] = i
		}
	}
	return first
}

// insertBatch records the first item of every key in one statement and returns the
// keys it inserted; the others were already recorded. Rows go in sorted key order, so
// every batch claims keys in the same order: a batch waiting for another's
// uncommitted key holds only keys below it, which the other never waits for.
func (in *Inbox) insertBatch(ctx context.Context, tx bun.Tx, items []Item, first map[string]int) (map[string]bool, error) {
	keys := slices.Sorted(maps.Keys(first))
	if len(keys) == 0 {
		return nil, nil
	}
	names := columnNames(items[first[keys[0]]])
	cols := []bun.Ident{"idempotency_key", "payload_hash", "result"}
	for _, n := range names {
		cols = append(cols, bun.Ident(n))
	}
	rows := make([]bun.TupleValues, len(keys))
	for r, key := range keys {
		it := items[first[key]]
		vals := []any{it.Key, it.PayloadHash, ResultApplied}
		for _, n := range names {
			vals = append(vals, sqlValue(it.Columns[n]))
		}
		rows[r] = bun.Tuple(vals)
	}
	var got []string
	err := tx.NewRaw(`INSERT INTO ? ? VALUES ? ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key`,
		bun.Ident(in.table), bun.Tuple(cols), bun.List(rows)).Scan(ctx, &got)
	if err != nil {
		return nil, fmt.Errorf("inbox: record keys: %w", err)
	}
	inserted := make(map[string]bool, len(got))
	for _, key := range got {
		inserted[key] = true
	}
	return inserted, nil
}

// record is a stored key's payload hash and result.
type record struct {
	Key    string `bun:"idempotency_key"`
	Hash   []byte `bun:"payload_hash"`
	Result string `bun:"result"`
}

// records reads the stored records of keys in one statement.
func (in *Inbox) records(ctx context.Context, tx bun.Tx, keys []string) (map[string]record, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var rows []record
	err := tx.NewRaw(`SELECT idempotency_key, payload_hash, result FROM ? WHERE idempotency_key IN (?)`,
		bun.Ident(in.table), bun.List(keys)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("inbox: read records: %w", err)
	}
	stored := make(map[string]record, len(rows))
	for _, r := range rows {
		stored[r.Key] = r
	}
	if len(stored) != len(keys) {
		// Only a concurrent purge of old records can remove a row between the two
		// statements; the sender's retry will find the key free.
		return nil, errors.New("inbox: a conflicting record vanished while reading it")
	}
	return stored, nil
}

// applyFresh runs apply on the fresh items, then removes the records of the items it
// rejected and stores the results other than ResultApplied, one statement each. It
// returns the results by item index.
func (in *Inbox) applyFresh(ctx context.Context, tx bun.Tx, items []Item, fresh []int, apply BatchApplyFunc) (map[int]ItemResult, error) {
	if len(fresh) == 0 {
		return nil, nil
	}
	results, err := apply(ctx, tx, fresh)
	if err != nil {
		return nil, err
	}
	if len(results) != len(fresh) {
		return nil, fmt.Errorf("inbox: apply returned %d results for %d items", len(results), len(fresh))
	}
	byIndex := make(map[int]ItemResult, len(fresh))
	var rejected []string
	var updates []bun.TupleValues
	for j, i := range fresh {
		r := results[j]
		r.Result = cmp.Or(r.Result, ResultApplied)
		byIndex[i] = r
		switch {
		case r.Err != nil:
			rejected = append(rejected, items[i].Key)
		case r.Result != ResultApplied:
			updates = append(updates, bun.Tuple([]any{items[i].Key, r.Result}))
		}
	}
	if len(rejected) > 0 {
		_, err := tx.NewRaw(`DELETE FROM ? WHERE idempotency_key IN (?)`, bun.Ident(in.table), bun.List(rejected)).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("inbox: remove rejected records: %w", err)
		}
	}
	if len(updates) > 0 {
		_, err := tx.NewRaw(`UPDATE ? AS t SET result = v.result FROM (VALUES ?) AS v (key, result)
			WHERE t.idempotency_key = v.key`, bun.Ident(in.table), bun.List(updates)).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("inbox: store results: %w", err)
		}
	}
	return byIndex, nil
}

// outcomes answers every item in request order.
func outcomes(items []Item, first map[string]int, stored map[string]record, results map[int]ItemResult) []BatchOutcome {
	outs := make([]BatchOutcome, len(items))
	for i, it := range items {
		if rec, ok := stored[it.Key]; ok {
			outs[i] = against(it, rec.Hash, Outcome{Duplicate: true, Result: rec.Result}, nil)
			continue
		}
		f := first[it.Key]
		if f == i {
			r := results[i]
			if r.Err != nil {
				outs[i] = BatchOutcome{Err: r.Err}
			} else {
				outs[i] = BatchOutcome{Outcome: Outcome{Result: r.Result}}
			}
			continue
		}
		prev := outs[f]
		outs[i] = against(it, items[f].PayloadHash, Outcome{Duplicate: prev.Err == nil, Result: prev.Result}, prev.Err)
	}
	return outs
}

// against is the outcome of it when its key is already taken by hash: out (or err)
// for the same payload, ErrKeyReuse for another.
func against(it Item, hash []byte, out Outcome, err error) BatchOutcome {
	if !it.matches(hash) {
		return BatchOutcome{Err: fmt.Errorf("%w: %q", ErrKeyReuse, it.Key)}
	}
	if err != nil {
		return BatchOutcome{Err: err}
	}
	return BatchOutcome{Outcome: out}
}

// sqlValue renders an untyped nil as NULL, which bun's tuples cannot format.
func sqlValue(v any) any {
	if v == nil {
		return bun.Safe("NULL")
	}
	return v
}
