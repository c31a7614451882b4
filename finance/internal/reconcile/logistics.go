package reconcile

import (
	"context"
	"fmt"
	"time"

	"handoff/finance/internal/logisticsclient"
)

// pageSize is the largest page logistics' ops API serves.
const pageSize = 1000

// OpsAPI reads logistics' processed events through its ops API, walking every page of
// a window; it implements Logistics.
type OpsAPI struct {
	Client *logisticsclient.Client
	// Progress, when set, hears after each page how many processed events have been
	// read so far, for a person watching a long window.
	Progress func(read int)
}

// Processed returns the keys logistics received in [from, to) with their receipt times.
func (a OpsAPI) Processed(ctx context.Context, from, to time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	q := logisticsclient.Query{From: from, To: to, Limit: pageSize}
	read := 0
	for {
		page, err := a.Client.ProcessedEvents(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("reconcile: logistics processed events: %w", err)
		}
		for _, ev := range page.Items {
			out[ev.IdempotencyKey] = ev.ReceivedAt
		}
		read += len(page.Items)
		if a.Progress != nil {
			a.Progress(read)
		}
		if page.NextCursor == "" {
			return out, nil
		}
		q.Cursor = page.NextCursor
	}
}
