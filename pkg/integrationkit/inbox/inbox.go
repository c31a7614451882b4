// Package inbox is the idempotent consumer: it applies each idempotency key once, in
// the same transaction as the business change it causes, and recognises every later
// copy of the same request as a duplicate.
//
// The table, named by the service, has the shape Schema returns (idempotency_key
// text PRIMARY KEY, payload_hash, result, received_at), plus the columns the service
// fills through Item.Columns.
//
// Process inserts the key with INSERT … ON CONFLICT DO NOTHING before it applies
// anything. A concurrent copy of the same key therefore blocks on the primary key until
// the first transaction ends: after a commit it sees the conflict and answers
// duplicate, after a rollback it proceeds and applies. Identical requests that arrive
// at the same instant thus give one application and duplicates, never an error.
//
// ProcessBatch does the same for many items in one transaction with set-based
// statements: the batch's keys are claimed by one insert in sorted order, and one
// call applies every fresh item.
//
// A consumer that changes what its payload hash covers keeps the records it stored
// before meaningful by giving each item the hash of the old form too
// (Item.PriorHashes): a record holding either is a duplicate, so a retry of a request
// processed before the change is not mistaken for a reused key. The old form is
// needed until the records stored before the change are purged.
package inbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/tracing"
)

// tracerScope names the inbox's spans' instrumentation.
const tracerScope = "handoff/pkg/integrationkit/inbox"

// ResultApplied is the result stored when apply returns an empty one.
const ResultApplied = "applied"

// ErrKeyReuse means the key was already processed with a different payload: the
// sender reused a key for another request. Nothing was applied.
var ErrKeyReuse = errors.New("inbox: idempotency key reused with a different payload")

// ErrInvalidItem means an Item lacks its key or payload hash, or names a column that
// is not a plain identifier.
var ErrInvalidItem = errors.New("inbox: invalid item")

// Item is one request to apply once.
type Item struct {
	// Key is the sender's stable idempotency key.
	Key string
	// PayloadHash identifies the request's content (see Hash and HashJSON); the same
	// key with another hash is rejected with ErrKeyReuse. It is the hash stored.
	PayloadHash []byte
	// PriorHashes are hashes of the same request in the forms an earlier release of
	// the consumer stored: a record holding one of them is a duplicate too. They are
	// compared, never stored.
	PriorHashes [][]byte
	// Columns are further columns of the inbox table stored with the record, by name
	// (lowercase identifiers), e.g. the event id and type for later inspection.
	Columns map[string]any
}

// Outcome says what Process did with an item.
type Outcome struct {
	// Duplicate is true when the key had already been processed with the same payload;
	// nothing was applied this time.
	Duplicate bool
	// Result is what apply returned, or for a duplicate the result stored the first time.
	Result string
}

// ApplyFunc makes the business change of an item inside the transaction r runs in
// and returns a short result to store with the record (empty means ResultApplied).
// An error rolls back the record too, so the same key can be tried again later.
//
// Under Process, r is a pgdb.Pipe: statements queued with r.Queue travel with the
// next one whose result is read, or with the COMMIT, so an item whose change reads
// once and writes a few rows costs three round trips in all (on a connection that
// has run its statements before: the first use prepares each).
type ApplyFunc func(ctx context.Context, r pgdb.Runner) (result string, err error)

// Inbox records processed keys in one table.
type Inbox struct {
	table string
}

// New returns the inbox kept in table.
func New(table string) (*Inbox, error) {
	if !pgdb.ValidIdentifier(table) {
		return nil, fmt.Errorf("inbox: table name %q is not a plain lowercase identifier", table)
	}
	return &Inbox{table: table}, nil
}

// Process applies it in a transaction of its own: the record and apply's changes
// commit together, or neither does (an apply error rolls both back and is returned).
// A duplicate applies nothing; a reused key returns ErrKeyReuse.
//
// Under a traced request the transaction is an "inbox.process" span of its trace.
func (in *Inbox) Process(ctx context.Context, db *bun.DB, it Item, apply ApplyFunc) (out Outcome, err error) {
	if err := it.validate(); err != nil {
		return Outcome{}, err
	}
	ctx, span := tracing.Child(ctx, tracerScope, "inbox.process")
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(attribute.String("handoff.inbox.table", in.table),
				attribute.String("handoff.idempotency_key", it.Key), attribute.Bool("handoff.inbox.duplicate", out.Duplicate),
				attribute.String("handoff.inbox.result", out.Result))
		}
		tracing.End(span, err)
	}()
	err = pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		var err error
		out, err = in.process(ctx, p, it, apply)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, nil
}

// ProcessTx is Process inside the caller's transaction, under a savepoint: when apply
// fails only this item's record and changes are undone and tx stays usable. A batch
// consumer may call it once per item and commit once, so a bad item spoils no other;
// ProcessBatch does the same for a whole batch with a fixed number of statements.
func (in *Inbox) ProcessTx(ctx context.Context, tx bun.Tx, it Item, apply ApplyFunc) (Outcome, error) {
	if err := it.validate(); err != nil {
		return Outcome{}, err
	}
	var out Outcome
	err := tx.RunInTx(ctx, nil, func(ctx context.Context, sp bun.Tx) error {
		var err error
		out, err = in.process(ctx, pgdb.Prepared(sp), it, apply)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, nil
}

func (in *Inbox) process(ctx context.Context, r pgdb.Runner, it Item, apply ApplyFunc) (Outcome, error) {
	inserted, err := in.insert(ctx, r, it)
	if err != nil {
		return Outcome{}, err
	}
	if !inserted {
		return in.duplicate(ctx, r, it)
	}
	result, err := apply(ctx, r)
	if err != nil {
		return Outcome{}, err
	}
	result = cmp.Or(result, ResultApplied)
	if result != ResultApplied {
		err := r.Queue(ctx, "inbox: store result", `UPDATE `+pgx.Identifier{in.table}.Sanitize()+
			` SET result = $1 WHERE idempotency_key = $2`, result, it.Key)
		if err != nil {
			return Outcome{}, err
		}
	}
	return Outcome{Result: result}, nil
}

// insert claims the key; it reports false when the key is already recorded. A
// concurrent uncommitted claim of the same key makes it wait for that transaction.
//
// The statement's text depends only on the table and the item's column names, and
// its values are parameters, so pgx prepares it once per connection (pgdb.Runner):
// it runs once per request.
func (in *Inbox) insert(ctx context.Context, r pgdb.Runner, it Item) (bool, error) {
	names := slices.Sorted(maps.Keys(it.Columns))
	cols := []string{"idempotency_key", "payload_hash", "result"}
	params := []string{"$1", "$2", "$3"}
	vals := []any{it.Key, it.PayloadHash, ResultApplied}
	for _, n := range names {
		cols = append(cols, pgx.Identifier{n}.Sanitize())
		params = append(params, "$"+strconv.Itoa(len(params)+1))
		vals = append(vals, it.Columns[n])
	}
	query := `INSERT INTO ` + pgx.Identifier{in.table}.Sanitize() + ` (` + strings.Join(cols, ", ") + `) VALUES (` +
		strings.Join(params, ", ") + `) ON CONFLICT (idempotency_key) DO NOTHING`
	res, err := r.Exec(ctx, query, vals...)
	if err != nil {
		return false, fmt.Errorf("inbox: record key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("inbox: record key: %w", err)
	}
	return n == 1, nil
}

func (in *Inbox) duplicate(ctx context.Context, r pgdb.Runner, it Item) (Outcome, error) {
	var hash []byte
	var result string
	found := false
	err := r.Each(ctx, `SELECT payload_hash, result FROM `+pgx.Identifier{in.table}.Sanitize()+
		` WHERE idempotency_key = $1`, []any{it.Key}, func(scan func(...any) error) error {
		found = true
		return scan(&hash, &result)
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("inbox: read record: %w", err)
	}
	if !found {
		// Only a concurrent purge of old records can remove the row between the two
		// statements; the sender's retry will find the key free.
		return Outcome{}, fmt.Errorf("inbox: record of key %q vanished while reading it", it.Key)
	}
	if !it.matches(hash) {
		return Outcome{}, fmt.Errorf("%w: %q", ErrKeyReuse, it.Key)
	}
	return Outcome{Duplicate: true, Result: result}, nil
}

// matches reports whether a record holding hash was stored for the same request as it.
func (it Item) matches(hash []byte) bool {
	return bytes.Equal(hash, it.PayloadHash) || slices.ContainsFunc(it.PriorHashes, func(h []byte) bool {
		return bytes.Equal(hash, h)
	})
}

func (it Item) validate() error {
	if it.Key == "" || len(it.PayloadHash) == 0 {
		return fmt.Errorf("%w: key and payload hash are required", ErrInvalidItem)
	}
	for n := range it.Columns {
		if !pgdb.ValidIdentifier(n) || n == "idempotency_key" || n == "payload_hash" || n == "result" {
			return fmt.Errorf("%w: column %q", ErrInvalidItem, n)
		}
	}
	return nil
}
