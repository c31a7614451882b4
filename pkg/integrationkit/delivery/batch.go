package delivery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"handoff/pkg/integrationkit/egress"
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
	IdempotencyKey string `json:"idempotency_key"`
	Attempt        int    `json:"attempt"`
	// CorrelationID is the X-Request-ID a single request would carry: the correlation
	// id of the request that wrote the event, so one grep follows it into the
	// receiver's logs in batch mode too.
	CorrelationID string   `json:"correlation_id,omitempty"`
	Event         Envelope `json:"event"`
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
//
// A refusal of the whole request never dead-letters the events inside it: a batch the
// receiver finds too large (400 or 413) is halved, and the receiver is never sent a
// larger one again; any other refusal (404 or 405 from a receiver without the batch
// endpoint, 415, a 2xx that is no batch answer, …) gets the destination single
// requests for a while. Each claim sends one request (or one round of single
// requests); what does not fit, or was refused, is released to the queue, so no event
// is sent after its lease could have run out. Failures of the
// whole request that the outcome table retries (5xx, 408, 409, 425, 429, 401, 403,
// timeouts, connection errors) are settled for every item alike. The probe of a
// half-open circuit carries one event; the rest go back to the queue.
func (d *Dispatcher) deliverBatch(ctx context.Context, recs []outbox.Record) {
	dest := recs[0].Destination
	if d.receivers.singleOnly(dest) {
		d.deliverEach(ctx, recs)
		return
	}
	if limit := d.receivers.batchLimit(dest, d.cfg.Batch); len(recs) > limit {
		// One request per claim: what does not fit goes back to the queue at once, to
		// be sent under a lease of its own rather than after this one ran out.
		d.release(ctx, recs[limit:])
		recs = recs[:limit]
	}
	ctx, span := d.startDeliverBatch(ctx, recs)
	defer span.End()
	permit, ok := d.admit(ctx, recs)
	if !ok {
		return
	}
	if permit.Probe {
		defer d.receivers.probe(dest)()
		if len(recs) > 1 {
			// A probe risks one event's attempt, not a batch's: through a long outage
			// the same heads would otherwise spend their budget probe after probe.
			d.release(ctx, recs[1:])
			recs = recs[:1]
		}
	}
	res, answers := d.sendBatch(ctx, recs)
	settleCtx, cancel := settleContext(ctx)
	defer cancel()
	if ctx.Err() != nil && res.err != nil {
		d.release(settleCtx, recs)
		return
	}
	whole, now := answerOf(res), time.Now()
	v := verdictOf(whole) // the request counts once toward the circuit
	if answers == nil && refused(classify(whole, now), res) {
		d.recordCircuit(settleCtx, recs[0], permit, v)
		d.fallBack(ctx, recs, res)
		return
	}
	items := make([]outbox.Settlement, len(recs))
	for i, rec := range recs {
		r, itemRes := whole, res
		if answers != nil {
			r, itemRes = itemAnswer(answers, rec, res)
		}
		items[i] = outbox.Settlement{Record: rec}
		items[i].Outcome, _ = d.outcome(rec, r, itemRes, now)
	}
	if len(items) == 1 {
		recordOutcome(span, items[0].Outcome)
	}
	if d.settle(settleCtx, items) > 0 {
		d.recordCircuit(settleCtx, recs[0], permit, v)
	}
}

// refused reports whether a batch request that brought no item answers was refused
// as a whole by a receiver that is up: an answer the outcome table would dead-letter
// an event for, or a 2xx without a batch answer in it. A destination the egress guard
// refused is not the receiver's word: its events are dead-lettered as single ones
// would be.
func refused(dec Decision, res response) bool {
	if res.err != nil {
		return false
	}
	return dec.Action == DeadLetter || dec.Action == Deliver
}

// fallBack handles a batch the receiver refused as a whole. A batch it found too
// large lowers the destination's batch limit; any other refusal gets the destination
// single requests for a while. Either way the events go back to the queue, and the
// next claim sends them as the receiver asked, under fresh leases. A lone event
// refused as too large is sent on its own at once: its single request decides.
func (d *Dispatcher) fallBack(ctx context.Context, recs []outbox.Record, res response) {
	dest := recs[0].Destination
	tooLarge := res.status == http.StatusBadRequest || res.status == http.StatusRequestEntityTooLarge
	switch {
	case tooLarge && len(recs) == 1:
		d.deliverEach(ctx, recs)
		return
	case tooLarge:
		limit := d.receivers.lowerBatchLimit(dest, len(recs)/2)
		d.log.WarnContext(ctx, "batch refused as too large; sending smaller ones", "destination", dest,
			"status_code", res.status, "events", len(recs), "batch_limit", limit)
	default:
		d.receivers.preferSingle(dest, time.Now().Add(singleFor))
		d.log.WarnContext(ctx, "batch endpoint refused the request; sending single requests", "destination", dest,
			"status_code", res.status, "events", len(recs), "for", singleFor)
	}
	d.release(ctx, recs)
}

// singleFor is how long a destination whose batch endpoint refused a request gets
// single requests before a batch is tried again (a rolling deploy may add it).
const singleFor = 5 * time.Minute

// eachInFlight bounds the single requests that stand in for one batch.
const eachInFlight = 16

// deliverEach sends up to eachInFlight of recs as single requests at once and gives
// the rest back to the queue, so every request goes out under a live lease.
func (d *Dispatcher) deliverEach(ctx context.Context, recs []outbox.Record) {
	if len(recs) > eachInFlight {
		d.release(ctx, recs[eachInFlight:])
		recs = recs[:eachInFlight]
	}
	adm := &admission{}
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Go(func() { d.deliver(ctx, rec, adm) })
	}
	wg.Wait()
}

// itemAnswer is one item's answer, to be decided as if it had come alone (an item the
// receiver did not answer is retried), and what the attempt log records of it.
func itemAnswer(answers map[string]BatchAnswer, rec outbox.Record, res response) (result, response) {
	a, ok := answers[rec.IdempotencyKey]
	if !ok {
		res.status, res.snippet = 0, ""
		return itemResult(nil), res
	}
	raw, _ := json.Marshal(a)
	res.status, res.snippet = a.Status, snippet(raw)
	return itemResult(&a), res
}

// sendBatch posts the batch and returns the transport result and, for a 200 whose
// body is a batch answer, the answers by key (nil otherwise).
func (d *Dispatcher) sendBatch(ctx context.Context, recs []outbox.Record) (res response, answers map[string]BatchAnswer) {
	url := recs[0].Destination + d.cfg.BatchSuffix
	ctx, span := d.startSend(ctx, url)
	defer func() { endSend(span, res) }()
	body, err := json.Marshal(batchRequest(recs))
	if err != nil {
		return response{err: fmt.Errorf("marshal batch: %w", err), started: time.Now()}, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return response{err: err, started: time.Now()}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return response{err: fmt.Errorf("build request: %w", err), started: time.Now()}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "handoff-dispatcher/1")
	req.Header.Set(HeaderRequestID, id.String())
	propagate(ctx, req.Header, loneTraceparent(recs))
	started := time.Now()
	if err := d.signer.SetHeaders(req.Header, id.String(), started, body); err != nil {
		return response{err: fmt.Errorf("sign: %w", err), started: started}, nil
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return response{err: err, started: started, duration: time.Since(started)}, nil
	}
	defer resp.Body.Close()
	data, _ := egress.ReadBody(resp.Body, batchResponseBytes) // too long or cut short: unreadable below
	res = response{status: resp.StatusCode, header: resp.Header, snippet: snippet(data),
		started: started, duration: time.Since(started)}
	if resp.StatusCode != http.StatusOK {
		return res, nil
	}
	var br BatchResponse
	if err := json.Unmarshal(data, &br); err != nil || br.Items == nil {
		d.log.WarnContext(ctx, "batch answer unreadable", "err", err)
		return res, nil
	}
	answers = make(map[string]BatchAnswer, len(br.Items))
	for _, a := range br.Items {
		answers[a.IdempotencyKey] = a
	}
	return res, answers
}

// loneTraceparent is the stored traceparent a batch of one passes on untraced.
func loneTraceparent(recs []outbox.Record) string {
	if len(recs) == 1 {
		return recs[0].Traceparent
	}
	return ""
}

// batchResponseBytes bounds a batch answer: a problem per item fits many times over.
const batchResponseBytes = 4 << 20

func batchRequest(recs []outbox.Record) BatchRequest {
	items := make([]BatchItem, len(recs))
	for i, rec := range recs {
		items[i] = BatchItem{IdempotencyKey: rec.IdempotencyKey, Attempt: rec.Requests + 1,
			CorrelationID: cmp.Or(rec.CorrelationID, rec.ID.String()), Event: envelope(rec)}
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
