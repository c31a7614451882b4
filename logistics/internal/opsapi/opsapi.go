// Package opsapi is the operations API of logistics (bearer token of role ops): what
// logistics did with finance's events, for tracing one invoice from finance's
// dashboard and for reconciling a time window of deliveries.
//
//	GET /v1/ops/processed-events?invoice_id=&from=&to=&limit=&cursor=
//
// lists processed idempotency keys oldest first with their result and receipt time;
// with invoice_id it also returns the invoice's shipment with its history. Any other
// query parameter is a 400 unknown-parameter.
package opsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"

	"handoff/logistics/internal/processedevents"
	"handoff/logistics/internal/shipment"
)

// Role is the bearer-token role the API requires.
const Role = "ops"

// Processed reads the processed-events record; *processedevents.Store implements it.
type Processed interface {
	List(ctx context.Context, f processedevents.Filter) (processedevents.Page, error)
}

// Shipments finds an invoice's shipment; *shipment.Service implements it.
type Shipments interface {
	List(ctx context.Context, f shipment.Filter, limit int) (shipment.Page, error)
	Get(ctx context.Context, id uuid.UUID) (shipment.Detail, error)
}

// API serves the ops routes.
type API struct {
	processed Processed
	shipments Shipments
	tokens    auth.Tokens
}

// New returns the API over its collaborators.
func New(p Processed, s Shipments, tokens auth.Tokens) *API {
	return &API{processed: p, shipments: s, tokens: tokens}
}

// Register adds the routes under /v1/ops to e.
func (a *API) Register(e *echo.Echo) {
	g := e.Group("/v1/ops", a.tokens.Require(Role))
	g.GET("/processed-events", a.processedEvents, strict.Query(queryParams...))
}

func (a *API) processedEvents(c echo.Context) error {
	f, err := parseQuery(c.QueryParams())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	page, err := a.processed.List(ctx, f)
	var fe *processedevents.FilterError
	if errors.As(err, &fe) {
		return problem.Invalid("the query is invalid", problem.FieldError{Field: fe.Field, Detail: fe.Detail})
	}
	if err != nil {
		return err
	}
	out := newListView(page)
	if f.InvoiceID != uuid.Nil {
		if out.Shipment, err = a.shipmentOf(ctx, f.InvoiceID); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

// shipmentOf returns the invoice's shipment with its history, or nil when it has none.
func (a *API) shipmentOf(ctx context.Context, invoiceID uuid.UUID) (*shipmentView, error) {
	page, err := a.shipments.List(ctx, shipment.Filter{InvoiceID: invoiceID}, 1)
	if err != nil {
		return nil, fmt.Errorf("shipment of invoice %s: %w", invoiceID, err)
	}
	if len(page.Items) == 0 {
		return nil, nil
	}
	d, err := a.shipments.Get(ctx, page.Items[0].ID)
	if errors.Is(err, shipment.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shipment of invoice %s: %w", invoiceID, err)
	}
	v := newShipmentView(d)
	return &v, nil
}
