package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// An event owes every page its outcomes owed until a pager takes them: a 401 owes
// "unauthorized", and a dead letter settled before a pager took that page owes
// "dead_letter" beside it, so on-call still hears "check the webhook secret".
func TestOwedPagesAccumulateUntilTaken(t *testing.T) {
	t.Parallel()
	db, _, store := outboxtest.Setup(t)
	ctx := context.Background()
	_, err := store.Enqueue(ctx, db, outbox.Event{Type: "t", AggregateKey: "a", Sequence: 1,
		IdempotencyKey: "k", Destination: "http://receiver", Payload: map[string]int{}})
	require.NoError(t, err)

	recs, err := store.Claim(ctx, db, "r", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.NoError(t, store.Settle(ctx, db, recs[0], outbox.Outcome{Status: outbox.StatusPending,
		Counted: true, Sent: true, StatusCode: 401, Label: "unauthorized", Page: "unauthorized"}))

	recs, err = store.Claim(ctx, db, "r", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.NoError(t, store.Settle(ctx, db, recs[0], outbox.Outcome{Status: outbox.StatusFailed,
		Counted: true, Sent: true, StatusCode: 400, Label: "rejected_by_receiver",
		FailedReason: "rejected_by_receiver", Page: "dead_letter"}))

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	pages, err := store.TakeOwedPages(ctx, tx, 10)
	require.NoError(t, err)
	var kinds []string
	for _, p := range pages {
		kinds = append(kinds, p.Page)
	}
	require.ElementsMatch(t, []string{"unauthorized", "dead_letter"}, kinds, "both owed pages survive")
}
