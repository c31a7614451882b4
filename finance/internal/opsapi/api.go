// Package opsapi is finance's operations API: JSON, a bearer token of role
// ops on every route, every error as application/problem+json with a stable type.
package opsapi

import (
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/strict"
)

// Role is the token role every route requires.
const Role = "ops"

// Register mounts the routes on g (use e.Group("") for the root):
//
//	GET  /v1/ops/outbox/stats                counts by status, oldest pending age, circuits
//	GET  /v1/ops/outbox/events               list (?status=&type=&invoice_id=&from=&to=&limit=&cursor=)
//	GET  /v1/ops/outbox/events/:id           one event with its attempts
//	POST /v1/ops/outbox/events/:id/retry     replay one event
//	POST /v1/ops/outbox/retry                replay by filter {"status","type","invoice_id","from","to","limit"}
//	GET  /v1/ops/invoices/:ref/trace         the invoice, its events and attempts, logistics' record
//
// A query parameter a route does not list is a 400 unknown-parameter, checked after
// the token.
func Register(g *echo.Group, svc *ops.Service, tokens auth.Tokens) {
	h := handlers{svc: svc}
	o := g.Group("/v1/ops", tokens.Require(Role), mapErrors)
	none := strict.Query()
	o.GET("/outbox/stats", h.stats, none)
	o.GET("/outbox/events", h.list, strict.Query(listParams...))
	o.GET("/outbox/events/:id", h.event, none)
	o.POST("/outbox/events/:id/retry", h.retry, none)
	o.POST("/outbox/retry", h.retryMatching, none)
	o.GET("/invoices/:ref/trace", h.trace, none)
}
