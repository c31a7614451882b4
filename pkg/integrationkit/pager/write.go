package pager

import (
	"context"
	"time"
)

// writeLoop stores queued alerts whenever some arrive. A failed write keeps them
// queued and is retried a second later; on shutdown what is left gets one last try.
func (p *Pager) writeLoop(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			p.flush(final)
			cancel()
			return
		case <-p.queue.ready:
		case <-retry.C:
		}
		if !p.flush(ctx) {
			retry.Reset(time.Second)
		}
	}
}

// flush writes every queued key and reports whether all were written.
func (p *Pager) flush(ctx context.Context) bool {
	pending, dropped := p.queue.take()
	if dropped > 0 {
		p.log.ErrorContext(ctx, "alerts dropped: too many distinct keys buffered", "dropped", dropped)
	}
	failed := map[string]*entry{}
	for key, e := range pending {
		if err := p.store.record(ctx, p.db, e, p.cfg.Gather); err != nil {
			p.log.WarnContext(ctx, "alert not stored yet; will retry", "alert_key", key, "err", err)
			failed[key] = e
		}
	}
	if len(failed) > 0 {
		p.queue.putBack(failed)
		return false
	}
	if len(pending) > 0 {
		p.poke()
	}
	return true
}
