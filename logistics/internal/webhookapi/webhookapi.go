// Package webhookapi receives finance's invoice events on POST /webhooks/finance and
// applies each idempotency key once: the processed-event record and the shipment
// change commit in one transaction (package inbox), and every answer is the one the
// sender's retry policy expects (2xx done, 409 later, other 4xx never).
package webhookapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/webhook"

	"handoff/logistics/internal/shipment"
)

// Path is where finance delivers events.
const Path = "/webhooks/finance"

// ProcessedEventsTable is the inbox table of logistics.
const ProcessedEventsTable = "logistics_processed_events"

// RetryLater is the Retry-After sent with an event that cannot apply yet.
const RetryLater = 5 * time.Second

// Shipments applies events; *shipment.Service is the implementation.
type Shipments interface {
	ApplyEvent(ctx context.Context, tx bun.IDB, ev shipment.Event) (shipment.Result, error)
}

// Config holds the handler's dependencies; all are required.
type Config struct {
	DB        *bun.DB
	Shipments Shipments
	Verifier  *webhook.Verifier
	Log       *slog.Logger
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
	in, err := inbox.New(ProcessedEventsTable)
	if err != nil {
		return nil, fmt.Errorf("webhookapi: %w", err)
	}
	return &Handler{cfg: cfg, inbox: in}, nil
}

// Register adds the webhook route to e.
func (h *Handler) Register(e *echo.Echo) {
	e.POST(Path, h.receive)
}

// Ack is the body of a 200 answer.
type Ack struct {
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
	// Stale is true when the shipment already reflected a later event of the invoice.
	Stale bool `json:"stale,omitempty"`
}

// receive checks the request in the order the contract fixes (size, media type,
// signature, key, event), then processes it.
func (h *Handler) receive(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if err := checkContentType(c.Request().Header.Get(echo.HeaderContentType)); err != nil {
		return err
	}
	if err := h.cfg.Verifier.Verify(c.Request().Header, body); err != nil {
		h.cfg.Log.WarnContext(c.Request().Context(), "webhook signature rejected", "err", err)
		return problem.New(http.StatusUnauthorized, "invalid-signature", err.Error())
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
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

// process applies one validated event in its own transaction.
func (h *Handler) process(ctx context.Context, ev event) (Ack, error) {
	item, apply := h.item(ev)
	out, err := h.inbox.Process(ctx, h.cfg.DB, item, apply)
	return h.answer(ctx, ev, out, err)
}

// item is the inbox item of ev and the change it makes; a batch applies the same
// pair per item with inbox.ProcessTx.
func (h *Handler) item(ev event) (inbox.Item, inbox.ApplyFunc) {
	item := inbox.Item{
		Key:         ev.IdempotencyKey,
		PayloadHash: ev.Hash,
		Columns: map[string]any{
			"event_id":   ev.ID.String(),
			"event_type": string(ev.Type),
			"invoice_id": ev.InvoiceID,
		},
	}
	apply := func(ctx context.Context, tx bun.Tx) (string, error) {
		res, err := h.cfg.Shipments.ApplyEvent(ctx, tx, ev.Event)
		return string(res), err
	}
	return item, apply
}

// answer maps the inbox outcome to the contract's answer.
func (h *Handler) answer(ctx context.Context, ev event, out inbox.Outcome, err error) (Ack, error) {
	switch {
	case errors.Is(err, inbox.ErrKeyReuse):
		return Ack{}, problem.New(http.StatusUnprocessableEntity, "idempotency-key-reused",
			"this idempotency key was already used for a different event")
	case errors.Is(err, shipment.ErrNotYetApplicable):
		p := problem.New(http.StatusConflict, "not-yet-applicable", err.Error())
		p.RetryAfter = RetryLater
		return Ack{}, p
	case err != nil:
		return Ack{}, fmt.Errorf("process event %s: %w", ev.ID, err)
	}
	h.cfg.Log.InfoContext(ctx, "webhook event processed", "event_id", ev.ID, "event_type", ev.Type,
		"invoice_id", ev.InvoiceID, "sequence", ev.Sequence, "idempotency_key", ev.IdempotencyKey,
		"duplicate", out.Duplicate, "result", out.Result)
	return Ack{Status: "ok", Duplicate: out.Duplicate, Stale: out.Result == string(shipment.ResultStale)}, nil
}
