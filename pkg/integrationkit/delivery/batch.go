package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/outbox"
)

// Delivery modes.
const (
	// ModeSingle sends one request per event.
	ModeSingle = "single"
	// ModeBatch sends the claimed events of one destination in one request to the
	// destination's batch endpoint, each item answered on its own.
	ModeBatch = "batch"
)

// BatchRequest is the body of a batch delivery.
type BatchRequest struct {
	Items []BatchItem `json:"items"`
}

// BatchItem is one event of a batch, with the key and attempt a single request would
// carry in its headers.
type BatchItem struct {
	IdempotencyKey string   `json:"idempotency_key"`
	Attempt        int      `json:"attempt"`
	Event          Envelope `json:"event"`
}

// BatchResponse is the receiver's answer: one item per request item.
type BatchResponse struct {
	Items []BatchAnswer `json:"items"`
}

// BatchAnswer is the answer to one item, with the status it would have had alone.
type BatchAnswer struct {
	IdempotencyKey string `json:"idempotency_key"`
	Status         int    `json:"status"`
	Duplicate      bool   `json:"duplicate,omitempty"`
	// RetryAfter (seconds) stands in for the Retry-After header of a single answer.
	RetryAfter int             `json:"retry_after,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}

// deliverBatch sends recs (one destination, at most one event per aggregate: the
// claim hands out only heads) in one request and settles every item in one statement.
func (d *Dispatcher) deliverBatch(ctx context.Context, recs []outbox.Record) {
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	permit, ok := d.admit(settleCtx, recs)
	if !ok {
		return
	}
	res, answers := d.sendBatch(ctx, recs)
	if ctx.Err() != nil && res.err != nil {
		d.release(settleCtx, recs)
		return
	}
	items := make([]outbox.Settlement, len(recs))
	whole := res.err != nil || res.status != http.StatusOK || answers == nil
	for i, rec := range recs {
		dec, itemRes := Classify(res.status, res.header, res.err, time.Now()), res
		if !whole {
			dec, itemRes = d.itemDecision(answers, rec, res)
		}
		items[i] = outbox.Settlement{Record: rec, Outcome: d.outcome(rec, dec, itemRes)}
	}
	if d.settle(settleCtx, items) == 0 {
		return
	}
	v := healthy
	if whole {
		v = verdictOf(items[0].Outcome)
	}
	d.recordCircuit(settleCtx, recs[0], permit, v)
}

// itemDecision classifies one item's answer as if it had come alone; an item the
// receiver did not answer is retried.
func (d *Dispatcher) itemDecision(answers map[string]BatchAnswer, rec outbox.Record, res response) (Decision, response) {
	a, ok := answers[rec.IdempotencyKey]
	if !ok {
		res.status, res.snippet = 0, ""
		return Decision{Action: Retry, Counted: true, Reason: "missing_item_answer"}, res
	}
	h := http.Header{}
	if a.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(a.RetryAfter))
	}
	raw, _ := json.Marshal(a)
	res.status, res.header, res.snippet = a.Status, h, snippet(raw)
	return Classify(a.Status, h, nil, time.Now()), res
}

// sendBatch posts the batch and returns the transport result and, for a 200 with a
// well-formed body, the answers by key (nil otherwise).
func (d *Dispatcher) sendBatch(ctx context.Context, recs []outbox.Record) (response, map[string]BatchAnswer) {
	body, err := json.Marshal(batchRequest(recs))
	if err != nil {
		return response{err: fmt.Errorf("marshal batch: %w", err), started: time.Now()}, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return response{err: err, started: time.Now()}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, recs[0].Destination+d.cfg.BatchSuffix, bytes.NewReader(body))
	if err != nil {
		return response{err: fmt.Errorf("build request: %w", err), started: time.Now()}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "handoff-dispatcher/1")
	req.Header.Set(HeaderRequestID, id.String())
	started := time.Now()
	d.signer.SetHeaders(req.Header, id.String(), started, body)
	resp, err := d.client.Do(req)
	if err != nil {
		return response{err: err, started: started, duration: time.Since(started)}, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, batchResponseBytes))
	res := response{status: resp.StatusCode, header: resp.Header, snippet: snippet(data),
		started: started, duration: time.Since(started)}
	if resp.StatusCode != http.StatusOK {
		return res, nil
	}
	var br BatchResponse
	if err := json.Unmarshal(data, &br); err != nil {
		d.log.WarnContext(ctx, "batch answer unreadable; every item will be retried", "err", err)
		return res, map[string]BatchAnswer{}
	}
	answers := make(map[string]BatchAnswer, len(br.Items))
	for _, a := range br.Items {
		answers[a.IdempotencyKey] = a
	}
	return res, answers
}

// batchResponseBytes bounds a batch answer: a problem per item fits many times over.
const batchResponseBytes = 4 << 20

func batchRequest(recs []outbox.Record) BatchRequest {
	items := make([]BatchItem, len(recs))
	for i, rec := range recs {
		items[i] = BatchItem{IdempotencyKey: rec.IdempotencyKey, Attempt: rec.Requests + 1, Event: envelope(rec)}
	}
	return BatchRequest{Items: items}
}

// groupByDestination splits claimed records into one batch per destination.
func groupByDestination(recs []outbox.Record) [][]outbox.Record {
	var order []string
	groups := map[string][]outbox.Record{}
	for _, rec := range recs {
		if _, ok := groups[rec.Destination]; !ok {
			order = append(order, rec.Destination)
		}
		groups[rec.Destination] = append(groups[rec.Destination], rec)
	}
	out := make([][]outbox.Record, 0, len(order))
	for _, dest := range order {
		out = append(out, groups[dest])
	}
	return out
}
