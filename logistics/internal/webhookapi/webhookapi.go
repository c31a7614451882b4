// Package webhookapi receives finance's invoice events on POST /webhooks/finance, one
// per request, and on POST /webhooks/finance/batch, many per request, and applies each
// idempotency key once: the processed-event record and the shipment change commit in
// one transaction (package inbox), and every answer is the one the sender's retry
// policy expects (2xx done, 409 later, other 4xx never).
package webhookapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/shipment"
)

// Path is where finance delivers events.
const Path = "/webhooks/finance"

// ProcessedEventsTable is the inbox table of logistics.
const ProcessedEventsTable = "logistics_processed_events"

// RetryLater is the Retry-After sent with an event that cannot apply yet.
const RetryLater = 5 * time.Second

// DefaultBatchMaxItems is the most items a batch request may carry unless
// Config.BatchMaxItems says otherwise.
const DefaultBatchMaxItems = 500

// Shipments applies events; *shipment.Service is the implementation.
type Shipments interface {
	ApplyEvent(ctx context.Context, r pgdb.Runner, ev shipment.Event) (shipment.Result, error)
	ApplyEvents(ctx context.Context, r pgdb.Runner, evs []shipment.Event) ([]shipment.Outcome, error)
}

// Config holds the handler's dependencies and limits; DB, Shipments, Verifier and Log
// are required.
type Config struct {
	DB        *bun.DB
	Shipments Shipments
	Verifier  *webhook.Verifier
	Log       *slog.Logger
	// BatchMaxItems bounds the items of one batch request; 0 means
	// DefaultBatchMaxItems.
	BatchMaxItems int
	// OnProcessed, when set, hears each processed event (metrics count duplicates).
	OnProcessed func(duplicate bool)
}

// Handler serves the finance webhook.
type Handler struct {
	cfg   Config
	inbox *inbox.Inbox
}

// New returns the handler of cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.DB == nil || cfg.Shipments == nil || cfg.Verifier == nil || cfg.Log == nil {
		return nil, errors.New("webhookapi: DB, Shipments, Verifier and Log are required")
	}
	if cfg.BatchMaxItems < 0 {
		return nil, errors.New("webhookapi: BatchMaxItems must not be negative")
	}
	cfg.BatchMaxItems = cmp.Or(cfg.BatchMaxItems, DefaultBatchMaxItems)
	in, err := inbox.New(ProcessedEventsTable)
	if err != nil {
		return nil, fmt.Errorf("webhookapi: %w", err)
	}
	return &Handler{cfg: cfg, inbox: in}, nil
}

// Register adds the webhook routes to e.
func (h *Handler) Register(e *echo.Echo) {
	e.POST(Path, h.receive)
	e.POST(BatchPath, h.receiveBatch)
}

// Ack is the body of a 200 answer.
type Ack struct {
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
	// Stale is true when the shipment already reflected a later event of the invoice.
	Stale bool `json:"stale,omitempty"`
}

// receive checks the request in the order the contract fixes (size, media type,
// signature, query, key and that the key is the signed webhook-id, event), then
// processes it.
func (h *Handler) receive(c echo.Context) error {
	body, err := h.readSigned(c, MaxBodyBytes)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	if key != c.Request().Header.Get(webhook.HeaderID) {
		// The key is signed as the webhook-id: another key is a captured delivery
		// replayed under a key the sender never signed.
		h.cfg.Log.WarnContext(c.Request().Context(), "webhook key is not the signed webhook-id")
		return problem.New(http.StatusUnauthorized, "idempotency-key-not-signed",
			"the X-Idempotency-Key must equal the signed webhook-id")
	}
	ev, err := parseEvent(body)
	if err != nil {
		return err
	}
	ev.IdempotencyKey = key
	ack, err := h.process(c.Request().Context(), ev)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ack)
}

// readSigned reads a body of at most limit bytes, then checks its media type, its
// signature (over the body exactly as received) and that the URL has no query
// parameters: the whole-request checks both endpoints make first, in that order.
func (h *Handler) readSigned(c echo.Context, limit int64) ([]byte, error) {
	body, err := readBody(c, limit)
	if err != nil {
		return nil, err
	}
	if err := checkContentType(c.Request().Header.Get(echo.HeaderContentType)); err != nil {
		return nil, err
	}
	if err := h.cfg.Verifier.Verify(c.Request().Header, body); err != nil {
		h.cfg.Log.WarnContext(c.Request().Context(), "webhook signature rejected", "err", err)
		return nil, problem.New(http.StatusUnauthorized, "invalid-signature", err.Error())
	}
	if err := strict.CheckQuery(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	return body, nil
}

// process applies one validated event in its own transaction: the inbox's pipe, three
// round trips (claim the key; lock the invoice and read its shipment; write and
// commit).
func (h *Handler) process(ctx context.Context, ev event) (Ack, error) {
	apply := func(ctx context.Context, r pgdb.Runner) (string, error) {
		res, err := h.cfg.Shipments.ApplyEvent(ctx, r, ev.Event)
		return string(res), err
	}
	out, err := h.inbox.Process(ctx, h.cfg.DB, inboxItem(ev), apply)
	return h.answer(ctx, ev, out, err)
}

// inboxItem is the inbox record of ev; the single and the batch endpoint store the
// same one, so each recognises the other's deliveries as duplicates.
func inboxItem(ev event) inbox.Item {
	return inbox.Item{
		Key:         ev.IdempotencyKey,
		PayloadHash: ev.Hash,
		PriorHashes: [][]byte{ev.PriorHash},
		Columns: map[string]any{
			"event_id":   ev.ID.String(),
			"event_type": string(ev.Type),
			"invoice_id": ev.InvoiceID,
		},
	}
}

// answer maps the inbox outcome to the contract's answer.
func (h *Handler) answer(ctx context.Context, ev event, out inbox.Outcome, err error) (Ack, error) {
	if p := refusal(err); p != nil {
		return Ack{}, p
	}
	if err != nil {
		return Ack{}, fmt.Errorf("process event %s: %w", ev.ID, err)
	}
	h.cfg.Log.InfoContext(ctx, "webhook event processed", "event_id", ev.ID, "event_type", ev.Type,
		"invoice_id", ev.InvoiceID, "sequence", ev.Sequence, "idempotency_key", ev.IdempotencyKey,
		"duplicate", out.Duplicate, "result", out.Result)
	if h.cfg.OnProcessed != nil {
		h.cfg.OnProcessed(out.Duplicate)
	}
	return Ack{Status: "ok", Duplicate: out.Duplicate, Stale: out.Result == string(shipment.ResultStale)}, nil
}

// refusal is the contract's answer to an event the inbox or the shipments refused,
// or nil when err is no such refusal.
func refusal(err error) *problem.Problem {
	switch {
	case errors.Is(err, inbox.ErrKeyReuse):
		return problem.New(http.StatusUnprocessableEntity, "idempotency-key-reused",
			"this idempotency key was already used for a different event")
	case errors.Is(err, shipment.ErrNotYetApplicable):
		p := problem.New(http.StatusConflict, "not-yet-applicable", err.Error())
		p.RetryAfter = RetryLater
		return p
	}
	return nil
}
