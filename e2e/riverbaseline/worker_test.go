package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/webhook"
)

func TestVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status     int
		retryAfter string
		snooze     time.Duration
		err        bool
	}{
		{status: 200},
		{status: 204},
		{status: 409, retryAfter: "5", snooze: 5 * time.Second},
		{status: 409, snooze: time.Second},
		{status: 409, retryAfter: "soon", snooze: time.Second},
		{status: 401, err: true},
		{status: 500, retryAfter: "5", err: true},
	} {
		snooze, err := verdict(tc.status, tc.retryAfter)
		require.Equal(t, tc.snooze, snooze, "%d %q", tc.status, tc.retryAfter)
		require.Equal(t, tc.err, err != nil, "%d %q", tc.status, tc.retryAfter)
	}
}

// The worker sends what finance's single mode sends: the envelope, the key as
// X-Idempotency-Key and as the signed webhook-id, a signature the receiver verifies.
func TestWorkSendsASignedEnvelope(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdefghijklmnopqrstuv")
	got := make(chan *http.Request, 1)
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		if err := webhook.NewVerifier([][]byte{secret}).Verify(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
		got <- r
	}))
	defer srv.Close()
	w := newDeliverWorker(srv.URL, [][]byte{secret}, 4)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	args := eventArgs{Envelope: delivery.Envelope{ID: "7847e98a-4ada-41ca-a420-497f6dac97a9", Type: "invoice.issued",
		OccurredAt: at, Sequence: 1, Data: json.RawMessage(`{"invoice_id":"i"}`)}, Key: "invoice.issued:i"}
	err := w.Work(context.Background(), &river.Job[eventArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: args})
	require.NoError(t, err)
	r := <-got
	require.Equal(t, "invoice.issued:i", r.Header.Get(delivery.HeaderIdempotencyKey))
	require.Equal(t, "invoice.issued:i", r.Header.Get(webhook.HeaderID))
	require.Equal(t, "1", r.Header.Get(delivery.HeaderAttempt))
	var env delivery.Envelope
	require.NoError(t, json.Unmarshal(body, &env))
	require.Equal(t, delivery.Envelope{ID: args.ID, Type: args.Type, OccurredAt: at, Sequence: 1, Data: args.Data}, env)
}

// The wait ends at the last completion of an event job, counts no other kind, and
// ends at once, with an error, on a discarded job or a closed subscription.
func TestWaitCompleted(t *testing.T) {
	t.Parallel()
	ev := func(kind river.EventKind, jobKind string, state rivertype.JobState) *river.Event {
		return &river.Event{Kind: kind, Job: &rivertype.JobRow{ID: 7, Kind: jobKind, State: state}}
	}
	done := ev(river.EventKindJobCompleted, eventKind, rivertype.JobStateCompleted)
	for _, tc := range []struct {
		name   string
		events []*river.Event
		close  bool
		err    string
	}{
		{name: "all completed", events: []*river.Event{done, done}},
		{name: "a retry is not the end", events: []*river.Event{
			ev(river.EventKindJobFailed, eventKind, rivertype.JobStateRetryable), done, done}},
		{name: "other kinds are not counted", close: true, err: "1 of 2 jobs completed", events: []*river.Event{
			ev(river.EventKindJobCompleted, "warmup", rivertype.JobStateCompleted), done}},
		{name: "discarded", err: "job 7 discarded", events: []*river.Event{
			ev(river.EventKindJobFailed, eventKind, rivertype.JobStateDiscarded)}},
		{name: "cancelled", err: "job 7 cancelled", events: []*river.Event{
			ev(river.EventKindJobCancelled, eventKind, rivertype.JobStateCancelled)}},
	} {
		ch := make(chan *river.Event, len(tc.events))
		for _, e := range tc.events {
			ch <- e
		}
		if tc.close {
			close(ch)
		}
		err := waitCompleted(context.Background(), ch, 2)
		if tc.err == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorContains(t, err, tc.err, tc.name)
	}
}
