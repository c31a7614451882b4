package pager

import (
	"context"
	"encoding/json"
	"time"
)

// claimBatch is how many due alerts one replica takes at a time: one, because the
// claim's lease covers one send (SendTimeout); a batch sent one by one to a slow Slack
// would outlive the lease of its last alerts and another replica would send them too.
const claimBatch = 1

// sendLoop sends due alerts, then sleeps until the next is due, a write pokes it, or
// Poll passes (another replica may have recorded something).
func (p *Pager) sendLoop(ctx context.Context) {
	for ctx.Err() == nil {
		p.sendDue(ctx)
		wait := p.cfg.Poll
		if d, ok, err := p.store.nextDue(ctx, p.db); err == nil && ok {
			wait = min(wait, max(d, 0)+10*time.Millisecond)
		}
		pause(ctx, p.wake, wait)
	}
}

// pause waits d, or until wake fires or ctx ends, whichever comes first.
func pause(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// sendDue claims and sends due alerts until none is left.
func (p *Pager) sendDue(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := p.store.claim(ctx, p.db, claimBatch, p.cfg.SendTimeout+5*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				p.log.WarnContext(ctx, "alert claim failed", "err", err)
			}
			return
		}
		for _, d := range batch {
			p.sendOne(ctx, d)
		}
		if len(batch) < claimBatch {
			return
		}
	}
}

// sendOne sends one claimed alert and records the result.
func (p *Pager) sendOne(ctx context.Context, d due) {
	var smp sample
	_ = json.Unmarshal(d.Sample, &smp) // a sample the pager wrote itself; empty if not
	msg := p.message(d, smp)
	sendCtx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	err := p.sender.Send(sendCtx, msg)
	cancel()
	if err != nil {
		retryIn := p.cfg.Retry[min(d.Failures, len(p.cfg.Retry)-1)]
		p.log.WarnContext(ctx, "alert not sent; will retry", "alert_key", d.Key, "retry_in", retryIn, "err", err)
		if err := p.store.failed(ctx, p.db, d, err, retryIn); err != nil {
			p.log.WarnContext(ctx, "alert failure not recorded; its claim will expire", "alert_key", d.Key, "err", err)
		}
		return
	}
	p.log.InfoContext(ctx, "alert sent", "alert_key", d.Key, "kind", d.Kind, "count", d.Count)
	if err := p.store.sent(ctx, p.db, d, p.cfg.Repeat); err != nil {
		// The claim expires and the message may go out again: a duplicate page, never a lost one.
		p.log.WarnContext(ctx, "alert sent but not recorded", "alert_key", d.Key, "err", err)
	}
}
