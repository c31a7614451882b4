package outbox

import (
	"context"

	"github.com/uptrace/bun"
)

// bulkChange is an operators' change of the events matching a filter (a retry, a
// skip): which statuses it takes, which matching events it may change, and what it
// writes. The filter's status defaults to failed.
type bulkChange struct {
	// verb names the change in its filter errors.
	verb string
	// refuse says why the change does not take a status; "" takes it.
	refuse func(status string) string
	// selects the events the change may make under f.
	selects func(s *Store, db bun.IDB, f Filter) *bun.SelectQuery
	// set is the UPDATE's SET list.
	set string
}

// filter checks f for the change and fills in its defaults.
func (c bulkChange) filter(f Filter) (Filter, error) {
	if f.Status == "" {
		f.Status = StatusFailed
	}
	if detail := c.refuse(f.Status); detail != "" {
		return f, &FilterError{Field: "status", Detail: detail}
	}
	if f.After != nil {
		return f, &FilterError{Field: "cursor", Detail: "a " + c.verb + " takes no cursor"}
	}
	return f, f.normalize(DefaultRetryLimit, MaxRetryLimit)
}

// changeBulk makes change to up to f.Limit events matching f, oldest first.
func (s *Store) changeBulk(ctx context.Context, db bun.IDB, f Filter, change bulkChange) (BulkResult, error) {
	f, err := change.filter(f)
	if err != nil {
		return BulkResult{}, err
	}
	return s.changeMatching(ctx, db, f, s.selector(change), change.set)
}

// countBulk is changeBulk's dry run: how many events it would change now, and
// whether more would remain.
func (s *Store) countBulk(ctx context.Context, db bun.IDB, f Filter, change bulkChange) (BulkResult, error) {
	f, err := change.filter(f)
	if err != nil {
		return BulkResult{}, err
	}
	return s.countMatching(ctx, db, f, s.selector(change))
}

func (s *Store) selector(change bulkChange) func(bun.IDB, Filter) *bun.SelectQuery {
	return func(db bun.IDB, f Filter) *bun.SelectQuery { return change.selects(s, db, f) }
}
