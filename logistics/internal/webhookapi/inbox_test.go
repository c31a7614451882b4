package webhookapi_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/logistics/internal/logisticstest"
	"handoff/logistics/internal/webhookapi"
	"handoff/pkg/integrationkit/inbox/inboxtest"
)

// The kit's inbox keeps its contract on logistics' own table, as logistics'
// migrations make it, with the columns the handler stores beside each key.
func TestInboxConformsOnProcessedEvents(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T) *bun.DB {
		return logisticstest.NewDB(t)
	}, webhookapi.ProcessedEventsTable, func(key string) map[string]any {
		return map[string]any{"event_id": "evt-" + key, "event_type": "invoice.paid", "invoice_id": uuid.New()}
	})
}
