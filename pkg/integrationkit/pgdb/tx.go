package pgdb

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"
)

type txKey struct{}

// WithTx returns ctx carrying tx as its ambient transaction: RunInTx called with the
// returned context works inside tx instead of beginning a transaction of its own. The
// idempotency middleware uses it so that a handler's change and the response stored
// for its Idempotency-Key commit together.
func WithTx(ctx context.Context, tx bun.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// RunInTx runs fn in a transaction and commits it when fn returns nil. When ctx
// carries an ambient transaction (WithTx), fn runs inside it under a savepoint: an
// error rolls back fn's writes only, and the owner of the ambient transaction
// commits the rest. Otherwise it begins a transaction of db with opts.
func RunInTx(ctx context.Context, db bun.IDB, opts *sql.TxOptions, fn func(ctx context.Context, tx bun.Tx) error) error {
	if tx, ok := ctx.Value(txKey{}).(bun.Tx); ok {
		return tx.RunInTx(ctx, opts, fn)
	}
	return db.RunInTx(ctx, opts, fn)
}
