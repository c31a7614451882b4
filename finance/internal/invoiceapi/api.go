// Package invoiceapi is the clerks' HTTP API of finance invoices (docs/contract.md): JSON
// in and out, a bearer token with role clerk on every route, Idempotency-Key honoured
// on every POST, and every error as application/problem+json with a stable type.
package invoiceapi

import (
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

// Role is the token role every route requires.
const Role = "clerk"

// Register mounts the routes on g (use e.Group("") for the root):
//
//	POST /v1/invoices                 issue
//	GET  /v1/invoices                 list (?status=&customer_id=&limit=&cursor=)
//	GET  /v1/invoices/:id             one invoice
//	POST /v1/invoices/:id/payments    record a payment
//	POST /v1/invoices/:id/refunds     refund a paid invoice
//
// A query parameter a route does not list is a 400 unknown-parameter, checked after
// authentication. Authentication runs before the idempotency middleware, so keys are
// scoped to the caller and unauthenticated requests never touch the key store; so does
// the query check, so a refused query stores no answer under the key.
func Register(g *echo.Group, svc *invoice.Service, tokens auth.Tokens, idem *idempotency.Middleware) {
	h := handlers{svc: svc}
	clerk := tokens.Require(Role)
	once := idem.Handler()
	none := strict.Query()
	mapErrors := problem.MapWith(problemFor)
	g.POST("/v1/invoices", mapErrors(h.issue), clerk, none, once)
	g.GET("/v1/invoices", mapErrors(h.list), clerk, strict.Query(filterParams...))
	g.GET("/v1/invoices/:id", mapErrors(h.get), clerk, none)
	g.POST("/v1/invoices/:id/payments", mapErrors(h.pay), clerk, none, once)
	g.POST("/v1/invoices/:id/refunds", mapErrors(h.refund), clerk, none, once)
}
