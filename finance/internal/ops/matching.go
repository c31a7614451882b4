package ops

import (
	"cmp"
	"context"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/pkg/integrationkit/outbox"
)

// Matching is an action by filter: the events it selects and whether it is a dry run.
type Matching struct {
	Filter outbox.Filter
	// DryRun asks how many events the action would change now and whether more would
	// remain; nothing is changed or recorded.
	DryRun bool
}

// RetryMatching replays the events m selects (outbox.Store.RetryMatching) and records
// it, or with m.DryRun only counts them. The action is checked in a dry run too, so
// the same request without DryRun is accepted.
func (s *Service) RetryMatching(ctx context.Context, m Matching, act Action) (outbox.BulkResult, error) {
	return s.matching(ctx, m, act, audit.Retry, s.cfg.Outbox.RetryMatching, s.cfg.Outbox.CountRetryable)
}

// SkipMatching gives up the dead letters m selects (outbox.Store.SkipMatching) and
// records it, or with m.DryRun only counts them, like RetryMatching.
func (s *Service) SkipMatching(ctx context.Context, m Matching, act Action) (outbox.BulkResult, error) {
	return s.matching(ctx, m, act, audit.Skip, s.cfg.Outbox.SkipMatching, s.cfg.Outbox.CountSkippable)
}

type bulk func(context.Context, bun.IDB, outbox.Filter) (outbox.BulkResult, error)

func (s *Service) matching(ctx context.Context, m Matching, act Action, action string, do, count bulk) (outbox.BulkResult, error) {
	act, err := act.check()
	if err != nil {
		return outbox.BulkResult{}, err
	}
	if m.DryRun {
		return count(ctx, s.cfg.DB, m.Filter)
	}
	var res outbox.BulkResult
	_, err = s.act(ctx, act, func(ctx context.Context, tx bun.IDB) (audit.Entry, []audit.Event, error) {
		var err error
		if res, err = do(ctx, tx, m.Filter); err != nil {
			return audit.Entry{}, nil, err
		}
		changed, err := events(res.Changed)
		if err != nil {
			return audit.Entry{}, nil, err
		}
		e := audit.Entry{Action: action, Count: res.Count, Filter: recorded(m.Filter)}
		if inv, err := uuid.Parse(m.Filter.AggregateKey); err == nil {
			e.InvoiceID = &inv
		}
		return e, changed, nil
	})
	return res, err
}

// recorded is f as an action by filter applies it: failed by default, at most
// DefaultRetryLimit events by default.
func recorded(f outbox.Filter) *audit.Filter {
	out := &audit.Filter{Status: cmp.Or(f.Status, outbox.StatusFailed), Type: f.Type, InvoiceID: f.AggregateKey,
		Limit: cmp.Or(f.Limit, outbox.DefaultRetryLimit)}
	if !f.CreatedFrom.IsZero() {
		out.From = &f.CreatedFrom
	}
	if !f.CreatedTo.IsZero() {
		out.To = &f.CreatedTo
	}
	return out
}
