// Package invoiceapi is the clerks' HTTP API of finance invoices (SPEC §3.1): JSON
// in and out, a bearer token with role clerk on every route, Idempotency-Key honoured
// on every POST, and every error as application/problem+json with a stable type.
package invoiceapi

import (
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/idempotency"
)

// Role is the token role every route requires.
const Role = "clerk"

// Register mounts the routes on g (use e.Group("") for the root):
//
//	POST /v1/invoices                 issue
//	GET  /v1/invoices                 list (?status=&customer=&limit=&cursor=)
//	GET  /v1/invoices/:id             one invoice
//	POST /v1/invoices/:id/payments    record a payment
//	POST /v1/invoices/:id/refunds     refund a paid invoice
//
// Authentication runs before the idempotency middleware, so keys are scoped to the
// caller and unauthenticated requests never touch the key store.
func Register(g *echo.Group, svc *invoice.Service, tokens auth.Tokens, idem *idempotency.Middleware) {
	h := handlers{svc: svc}
	clerk := tokens.Require(Role)
	once := idem.Handler()
	g.POST("/v1/invoices", mapErrors(h.issue), clerk, once)
	g.GET("/v1/invoices", mapErrors(h.list), clerk)
	g.GET("/v1/invoices/:id", mapErrors(h.get), clerk)
	g.POST("/v1/invoices/:id/payments", mapErrors(h.pay), clerk, once)
	g.POST("/v1/invoices/:id/refunds", mapErrors(h.refund), clerk, once)
}
