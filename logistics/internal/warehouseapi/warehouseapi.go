// Package warehouseapi is the warehouse's JSON API over shipments: list and read them
// with their history, and move them through the state machine with optimistic
// locking. Every route needs a bearer token of role warehouse.
package warehouseapi

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

	"handoff/logistics/internal/shipment"
)

// Role is the bearer-token role the API requires.
const Role = "warehouse"

// Shipments reads and moves shipments; *shipment.Service is the implementation.
type Shipments interface {
	Get(ctx context.Context, id uuid.UUID) (shipment.Detail, error)
	List(ctx context.Context, f shipment.Filter, limit int) (shipment.Page, error)
	Move(ctx context.Context, id uuid.UUID, to shipment.State, version int64) (shipment.Detail, error)
}

// API serves the warehouse routes.
type API struct {
	shipments Shipments
	tokens    auth.Tokens
}

// New returns the API over shipments, admitting the warehouse tokens of tokens.
func New(shipments Shipments, tokens auth.Tokens) *API {
	return &API{shipments: shipments, tokens: tokens}
}

// Register adds the routes under /v1/shipments to e. A query parameter a route does
// not list is a 400 unknown-parameter, checked after the token.
func (a *API) Register(e *echo.Echo) {
	g := e.Group("/v1/shipments", a.tokens.Require(Role))
	g.GET("", a.list, strict.Query(listParams...))
	g.GET("/:id", a.get, strict.Query())
	g.POST("/:id/transitions", a.move, strict.Query())
}

func (a *API) list(c echo.Context) error {
	q, err := parseListQuery(c.QueryParams())
	if err != nil {
		return err
	}
	page, err := a.shipments.List(c.Request().Context(), q.filter, q.limit)
	if err != nil {
		return fmt.Errorf("list shipments: %w", err)
	}
	out := listView{Items: make([]shipment.View, 0, len(page.Items))}
	for _, s := range page.Items {
		out.Items = append(out.Items, shipment.ViewOf(s))
	}
	if page.More {
		out.NextCursor = encodeCursor(page.Items[len(page.Items)-1].Seq)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) get(c echo.Context) error {
	id, err := shipmentID(c)
	if err != nil {
		return err
	}
	d, err := a.shipments.Get(c.Request().Context(), id)
	if err != nil {
		return domainProblem(err)
	}
	return c.JSON(http.StatusOK, detailOf(d))
}

func (a *API) move(c echo.Context) error {
	id, err := shipmentID(c)
	if err != nil {
		return err
	}
	req, err := decodeMove(c)
	if err != nil {
		return err
	}
	d, err := a.shipments.Move(c.Request().Context(), id, req.to, req.version)
	if err != nil {
		return domainProblem(err)
	}
	return c.JSON(http.StatusOK, detailOf(d))
}

// shipmentID reads the :id path parameter; a malformed id names no shipment (404).
func shipmentID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, problem.New(http.StatusNotFound, "not-found", "no shipment has this id")
	}
	return id, nil
}

// domainProblem maps the shipment domain's refusals to their HTTP answers.
func domainProblem(err error) error {
	var te *shipment.TransitionError
	var ve *shipment.VersionError
	switch {
	case errors.Is(err, shipment.ErrNotFound):
		return problem.New(http.StatusNotFound, "not-found", "no shipment has this id")
	case errors.As(err, &ve):
		return problem.New(http.StatusConflict, "version-conflict", ve.Error())
	case errors.As(err, &te):
		return problem.New(http.StatusUnprocessableEntity, "illegal-transition", te.Error())
	default:
		return err
	}
}
