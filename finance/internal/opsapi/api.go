// Package opsapi is finance's operations API: JSON, a bearer token of role
// ops on every route, every error as application/problem+json with a stable type.
package opsapi

import (
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

// Role is the token role every route requires.
const Role = "ops"

// Register mounts the routes on g (use e.Group("") for the root):
//
//	GET  /v1/ops/outbox/stats                counts by status, oldest pending age, circuits
//	GET  /v1/ops/outbox/events               list (?status=&type=&invoice_id=&from=&to=&limit=&cursor=)
//	GET  /v1/ops/outbox/events/:id           one event with its attempts and audit entries
//	POST /v1/ops/outbox/events/:id/retry     replay one event {"reason"}
//	POST /v1/ops/outbox/events/:id/skip      give up one dead letter {"reason"}
//	POST /v1/ops/outbox/events/:id/resend    send one delivered event again {"reason"}
//	POST /v1/ops/outbox/retry                replay by filter {"status","type","invoice_id","from","to","limit","reason","dry_run"}
//	POST /v1/ops/outbox/skip                 skip dead letters by filter (the same body)
//	POST /v1/ops/outbox/retarget             move undelivered events to the current destination {"from","reason"}
//	POST /v1/ops/destinations/pause          stop deliveries to a destination {"destination","reason"}
//	POST /v1/ops/destinations/resume         let them go again {"destination","reason"}
//	GET  /v1/ops/audit                       the audit log (?event_id=&invoice_id=&limit=&cursor=)
//	GET  /v1/ops/invoices/:ref/trace         the invoice, its events, attempts and actions, logistics' record
//
// Every action needs a reason and is written to the audit log, with the token's
// principal, in the transaction of its change. A query parameter a route does not
// list is a 400 unknown-parameter, checked after the token.
func Register(g *echo.Group, svc *ops.Service, tokens auth.Tokens) {
	h := handlers{svc: svc}
	o := g.Group("/v1/ops", tokens.Require(Role), problem.MapWith(problemFor))
	none := strict.Query()
	o.GET("/outbox/stats", h.stats, none)
	o.GET("/outbox/events", h.list, strict.Query(listParams...))
	o.GET("/outbox/events/:id", h.event, none)
	o.POST("/outbox/events/:id/retry", h.onEvent((*ops.Service).RetryEvent), none)
	o.POST("/outbox/events/:id/skip", h.onEvent((*ops.Service).Skip), none)
	o.POST("/outbox/events/:id/resend", h.onEvent((*ops.Service).Resend), none)
	o.POST("/outbox/retry", h.retryMatching, none)
	o.POST("/outbox/skip", h.skipMatching, none)
	o.POST("/outbox/retarget", h.retarget, none)
	o.POST("/destinations/pause", h.pause, none)
	o.POST("/destinations/resume", h.resume, none)
	o.GET("/audit", h.audit, strict.Query(auditParams...))
	o.GET("/invoices/:ref/trace", h.trace, none)
}
