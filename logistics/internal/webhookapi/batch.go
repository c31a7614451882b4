package webhookapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/httpserver"
	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/problem"

	"handoff/logistics/internal/shipment"
)

// BatchPath is where finance delivers batches of events.
const BatchPath = "/webhooks/finance/batch"

// BatchResponse is the body of a 200 answer to a batch: one answer per item, in the
// request's order.
type BatchResponse struct {
	Items []ItemAnswer `json:"items"`
}

// ItemAnswer is one item's answer: the status the single endpoint would have given
// the item alone, with its Ack fields or its problem.
type ItemAnswer struct {
	IdempotencyKey string `json:"idempotency_key"`
	Status         int    `json:"status"`
	// Duplicate is set on 200 answers only.
	Duplicate *bool `json:"duplicate,omitempty"`
	// Stale is true when the shipment already reflected a later event of the invoice.
	Stale bool `json:"stale,omitempty"`
	// RetryAfter, on a 409, is how many seconds to wait before delivering the item
	// again (the single endpoint's Retry-After header).
	RetryAfter int `json:"retry_after,omitempty"`
	// Error is the problem of an answer other than 200.
	Error *problem.Problem `json:"error,omitempty"`
}

// batchItem is one item of a batch request; its attempt number is transport detail
// and is not read. Its correlation id, when valid, tags the item's log lines as a
// single request's X-Request-ID would; an invalid one is ignored, as a bad
// X-Request-ID is.
type batchItem struct {
	IdempotencyKey string          `json:"idempotency_key"`
	CorrelationID  string          `json:"correlation_id"`
	Event          json.RawMessage `json:"event"`
}

// receiveBatch checks the whole request as the single endpoint does (size, media
// type, signature), then its shape, then each item on its own; the valid items are
// processed together in one transaction.
func (h *Handler) receiveBatch(c echo.Context) error {
	body, err := h.readSigned(c, MaxBatchBodyBytes)
	if err != nil {
		return err
	}
	raws, err := parseBatch(body, h.cfg.BatchMaxItems)
	if err != nil {
		return err
	}
	answers := make([]ItemAnswer, len(raws))
	var valid []int
	var evs []event
	for i, raw := range raws {
		key, ev, err := parseItem(raw)
		var p *problem.Problem
		switch {
		case errors.As(err, &p):
			answers[i] = ItemAnswer{IdempotencyKey: key, Status: p.Status, Error: p}
		case err != nil:
			return err
		default:
			valid = append(valid, i)
			evs = append(evs, ev)
		}
	}
	if err := h.processBatch(c.Request().Context(), evs, valid, answers); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, BatchResponse{Items: answers})
}

// parseBatch returns the items of a batch body: exactly one JSON object whose items
// array holds 1 to maxItems elements, its members named once and exactly. Anything
// else is a 400 for the whole request. The items are left raw: each is checked on its
// own, so a fault inside one spoils only that one.
func parseBatch(body []byte, maxItems int) ([]json.RawMessage, error) {
	var req struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := extensible.Decode(body, &req); err != nil {
		return nil, problem.Newf(http.StatusBadRequest, "malformed-batch",
			`the body must be one JSON object {"items":[...]}: %v`, err)
	}
	switch {
	case len(req.Items) == 0:
		return nil, problem.New(http.StatusBadRequest, "malformed-batch", "items must be an array of at least one item")
	case len(req.Items) > maxItems:
		return nil, problem.Newf(http.StatusBadRequest, "too-many-items",
			"a batch holds at most %d items, this one %d", maxItems, len(req.Items))
	}
	return req.Items, nil
}

// parseItem validates one item as the single endpoint validates a request: the size
// of its event, then its key, then its event. A *problem.Problem error is the item's
// answer; any other error fails the whole request.
func parseItem(raw json.RawMessage) (string, event, error) {
	var it batchItem
	if !isObject(raw) {
		return "", event{}, badItem("it is not an object")
	}
	if err := extensible.Decode(raw, &it); err != nil {
		return it.IdempotencyKey, event{}, badItem(err.Error())
	}
	if len(it.Event) > MaxBodyBytes {
		return it.IdempotencyKey, event{}, tooLarge(MaxBodyBytes)
	}
	if p := checkKey("idempotency_key", it.IdempotencyKey); p != nil {
		return it.IdempotencyKey, event{}, p
	}
	ev, err := parseEvent(it.Event)
	if err != nil {
		return it.IdempotencyKey, event{}, err
	}
	ev.IdempotencyKey = it.IdempotencyKey
	if httpserver.ValidRequestID(it.CorrelationID) {
		ev.correlationID = it.CorrelationID
	}
	return it.IdempotencyKey, ev, nil
}

// badItem is the answer to an item that is not one object holding a string
// idempotency_key and an event; why says what is wrong with it.
func badItem(why string) *problem.Problem {
	return problem.New(http.StatusBadRequest, "malformed-item",
		"an item must be an object with a string idempotency_key and an event object: "+why)
}

// processBatch applies evs, the valid items at positions idx of the request, in one
// inbox batch and fills in their answers.
func (h *Handler) processBatch(ctx context.Context, evs []event, idx []int, answers []ItemAnswer) error {
	if len(evs) == 0 {
		return nil
	}
	items := make([]inbox.Item, len(evs))
	for k, ev := range evs {
		items[k] = inboxItem(ev)
	}
	apply := func(ctx context.Context, tx bun.Tx, fresh []int) ([]inbox.ItemResult, error) {
		batch := make([]shipment.Event, len(fresh))
		for j, k := range fresh {
			batch[j] = evs[k].Event
		}
		outs, err := h.cfg.Shipments.ApplyEvents(ctx, pgdb.Prepared(tx), batch)
		if err != nil {
			return nil, err
		}
		results := make([]inbox.ItemResult, len(outs))
		for j, o := range outs {
			results[j] = inbox.ItemResult{Result: string(o.Result), Err: o.Err}
		}
		return results, nil
	}
	outs, err := h.inbox.ProcessBatch(ctx, h.cfg.DB, items, apply)
	if err != nil {
		return fmt.Errorf("process batch of %d events: %w", len(evs), err)
	}
	var tally batchTally
	for k, out := range outs {
		a, err := h.itemAnswer(ctx, evs[k], out)
		if err != nil {
			return err
		}
		answers[idx[k]] = a
		tally.add(a)
	}
	h.cfg.Log.InfoContext(ctx, "webhook batch processed", "items", len(answers), "applied", tally.applied,
		"duplicates", tally.duplicates, "refused", len(answers)-tally.applied-tally.duplicates)
	return nil
}

// itemAnswer is the answer to one processed item; an error the contract has no
// answer for fails the whole request.
func (h *Handler) itemAnswer(ctx context.Context, ev event, out inbox.BatchOutcome) (ItemAnswer, error) {
	a := ItemAnswer{IdempotencyKey: ev.IdempotencyKey}
	if out.Err != nil {
		p := refusal(out.Err)
		if p == nil {
			return ItemAnswer{}, fmt.Errorf("process event %s: %w", ev.ID, out.Err)
		}
		a.Status, a.Error, a.RetryAfter = p.Status, p, int(math.Ceil(p.RetryAfter.Seconds()))
		return a, nil
	}
	if ev.correlationID != "" {
		ctx = logging.WithCorrelationID(ctx, ev.correlationID)
	}
	h.cfg.Log.InfoContext(ctx, "webhook event processed", "event_id", ev.ID, "event_type", ev.Type,
		"invoice_id", ev.InvoiceID, "sequence", ev.Sequence, "idempotency_key", ev.IdempotencyKey,
		"duplicate", out.Duplicate, "result", out.Result)
	if h.cfg.OnProcessed != nil {
		h.cfg.OnProcessed(out.Duplicate)
	}
	a.Status, a.Duplicate, a.Stale = http.StatusOK, &out.Duplicate, out.Result == string(shipment.ResultStale)
	return a, nil
}

// batchTally counts a batch's 200 answers for its log line.
type batchTally struct{ applied, duplicates int }

func (t *batchTally) add(a ItemAnswer) {
	switch {
	case a.Duplicate == nil:
	case *a.Duplicate:
		t.duplicates++
	default:
		t.applied++
	}
}
