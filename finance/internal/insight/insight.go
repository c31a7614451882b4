// Package insight answers what finance's on-call dashboard shows beyond the state the
// ops service reports: the trend of delivery over the last hour and day (charts read
// from a per-minute rollup this package maintains), and the causes behind a row (the
// failed event holding an invoice's later events back, the invoice's number, the
// alerts paged). Every query reads finance's tables with bound parameters; only Roll
// writes, and only to its rollup table finance_outbox_minutes.
package insight

import (
	"errors"

	"github.com/uptrace/bun"
)

// Store runs the dashboard's read queries and the chart rollup against finance's
// database.
type Store struct {
	db *bun.DB
}

// New returns the store reading db.
func New(db *bun.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("insight: db is required")
	}
	return &Store{db: db}, nil
}
