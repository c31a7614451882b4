package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"handoff/pkg/integrationkit/delivery"
	"handoff/pkg/integrationkit/webhook"
)

// eventArgs is one seeded event as a River job: the envelope finance would send, and
// its idempotency key.
type eventArgs struct {
	delivery.Envelope
	Key string `json:"idempotency_key"`
}

// eventKind names the jobs of seeded events; the statistics count only them.
const eventKind = "handoff_event"

func (eventArgs) Kind() string { return eventKind }

// deliverWorker posts an event to logistics the way finance's single mode does: the
// same envelope, the same headers, the idempotency key signed as the webhook-id.
type deliverWorker struct {
	river.WorkerDefaults[eventArgs]
	url    string
	client *http.Client
	signer *webhook.Signer
	// snoozed counts 409 answers (an invoice.paid ahead of its invoice.issued), each
	// snoozed for the Retry-After logistics gave, as finance would wait.
	snoozed atomic.Int64
}

func newDeliverWorker(url string, secrets [][]byte, maxWorkers int) *deliverWorker {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxWorkers // as finance keeps one per concurrent delivery
	return &deliverWorker{url: url, signer: webhook.NewSigner(secrets),
		client: &http.Client{Transport: t, Timeout: 10 * time.Second}}
}

// Work sends the event once; River retries it on an error and waits on a snooze.
func (w *deliverWorker) Work(ctx context.Context, job *river.Job[eventArgs]) error {
	a := job.Args
	envelope := a.Envelope
	envelope.OccurredAt = envelope.OccurredAt.UTC()
	body, err := json.Marshal(envelope)
	if err != nil {
		return fmt.Errorf("marshal envelope: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "handoff-river-baseline/1")
	req.Header.Set(delivery.HeaderIdempotencyKey, a.Key)
	req.Header.Set(delivery.HeaderAttempt, strconv.Itoa(job.Attempt))
	req.Header.Set(delivery.HeaderRequestID, a.ID)
	if err := w.signer.SetHeaders(req.Header, a.Key, time.Now(), body); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	snooze, err := verdict(resp.StatusCode, resp.Header.Get("Retry-After"))
	if snooze > 0 {
		w.snoozed.Add(1)
		return river.JobSnooze(snooze)
	}
	return err
}

// verdict is what an answer means for the job: done (nil), wait and send again
// (snooze > 0: logistics answers 409 with Retry-After to an event it cannot apply
// yet), or an error River retries with its own backoff.
func verdict(status int, retryAfter string) (snooze time.Duration, err error) {
	switch {
	case status >= 200 && status < 300:
		return 0, nil
	case status == http.StatusConflict:
		if s, err := strconv.Atoi(retryAfter); err == nil && s > 0 {
			return time.Duration(s) * time.Second, nil
		}
		return time.Second, nil
	default:
		return 0, fmt.Errorf("logistics answered %d", status)
	}
}
