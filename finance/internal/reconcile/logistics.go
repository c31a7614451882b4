package reconcile

import (
	"context"
	"fmt"
	"time"

	"handoff/finance/internal/logisticsops"
)

// pageSize is the largest page logistics' ops API serves.
const pageSize = 1000

// OpsAPI reads logistics' processed events through its ops API, walking every page of
// a window; it implements Logistics.
type OpsAPI struct {
	Client *logisticsops.Client
}

// Processed returns the keys logistics received in [from, to) with their receipt times.
func (a OpsAPI) Processed(ctx context.Context, from, to time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	q := logisticsops.Query{From: from, To: to, Limit: pageSize}
	for {
		page, err := a.Client.ProcessedEvents(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("reconcile: logistics processed events: %w", err)
		}
		for _, ev := range page.Items {
			out[ev.IdempotencyKey] = ev.ReceivedAt
		}
		if page.NextCursor == "" {
			return out, nil
		}
		q.Cursor = page.NextCursor
	}
}
