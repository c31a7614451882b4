package pager

import (
	"context"

	"github.com/uptrace/bun"
)

// Debtor is a table whose rows owe on-call pages, written there by the same statement
// as the change they report (a settled dead letter, a circuit that opened), so that a
// replica dying right after cannot lose them.
type Debtor interface {
	// TakeOwed takes up to limit of the owed pages (it may return a few more) and
	// marks them taken, in tx: the pager records them in the same transaction, so
	// each is paged exactly once, by whichever replica takes it.
	TakeOwed(ctx context.Context, tx bun.Tx, limit int) ([]Alert, error)
}

// sweepBatch is how many owed pages one transaction takes.
const sweepBatch = 500

// owe wakes the sweep: something owes a page now.
func (p *Pager) owe() {
	select {
	case p.owed <- struct{}{}:
	default:
	}
}

// sweepLoop records owed pages when woken, and every Poll in case another replica
// died owing some, until ctx ends.
func (p *Pager) sweepLoop(ctx context.Context) {
	for ctx.Err() == nil {
		p.sweep(ctx)
		pause(ctx, p.owed, p.cfg.Poll)
	}
}

// sweep takes what every debtor owes until nothing is left.
func (p *Pager) sweep(ctx context.Context) {
	for _, d := range p.debtors {
		for ctx.Err() == nil {
			n, err := p.takeOwed(ctx, d)
			if err != nil {
				if ctx.Err() == nil {
					p.log.WarnContext(ctx, "owed pages not taken yet; will retry", "err", err)
				}
				break
			}
			if n < sweepBatch {
				break
			}
		}
	}
}

// takeOwed moves one batch of d's owed pages into the alert table, in one transaction,
// and returns how many it took.
func (p *Pager) takeOwed(ctx context.Context, d Debtor) (int, error) {
	var n int
	err := p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		alerts, err := d.TakeOwed(ctx, tx, sweepBatch)
		if err != nil {
			return err
		}
		n = len(alerts)
		q := newQueue(len(alerts) + 1)
		for _, a := range alerts {
			q.merge(a.Key, &entry{count: 1, latest: a})
		}
		pending, _ := q.take()
		for _, e := range pending {
			if err := p.store.record(ctx, tx, e, p.cfg.Gather); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && n > 0 {
		p.poke()
	}
	return n, err
}
