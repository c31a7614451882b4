package opsapi

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/outbox"
)

type handlers struct {
	svc *ops.Service
}

func (h handlers) stats(c echo.Context) error {
	ov, err := h.svc.Overview(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, NewStats(ov))
}

func (h handlers) list(c echo.Context) error {
	q, err := parseListQuery(c.QueryParams())
	if err != nil {
		return err
	}
	f, err := h.resolve(c.Request().Context(), q)
	if err != nil {
		return err
	}
	page, err := h.svc.Events(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := listJSON{Items: make([]eventJSON, len(page.Items))}
	for i, ev := range page.Items {
		out.Items[i] = newEventJSON(ev)
	}
	if page.Next != nil {
		out.NextCursor = page.Next.String()
	}
	return c.JSON(http.StatusOK, out)
}

func (h handlers) event(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := h.svc.Event(ctx, id)
	if err != nil {
		return err
	}
	actions, err := h.svc.EventActions(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newDetailJSON(d, actions, nil))
}

// onEvent answers an action on one event: retry, skip or resend.
func (h handlers) onEvent(do func(*ops.Service, context.Context, uuid.UUID, ops.Action) (outbox.StoredEvent, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := eventID(c)
		if err != nil {
			return err
		}
		var req reasonRequest
		if err := decode(c, &req, "a reason"); err != nil {
			return err
		}
		ev, err := do(h.svc, c.Request().Context(), id, action(c, req.Reason))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, newEventJSON(ev))
	}
}

func (h handlers) retryMatching(c echo.Context) error {
	res, dryRun, err := h.matching(c, (*ops.Service).RetryMatching, "a retry filter")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retryJSON{Retried: res.Count, More: res.More, DryRun: dryRun})
}

func (h handlers) skipMatching(c echo.Context) error {
	res, dryRun, err := h.matching(c, (*ops.Service).SkipMatching, "a skip filter")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, skipJSON{Skipped: res.Count, More: res.More, DryRun: dryRun})
}

// matching runs an action by filter, or its dry run, and says which it was; what
// names the body in a malformed-json problem.
func (h handlers) matching(c echo.Context, do func(*ops.Service, context.Context, ops.Matching, ops.Action) (outbox.BulkResult, error),
	what string) (outbox.BulkResult, bool, error) {
	var req filterRequest
	if err := decode(c, &req, what); err != nil {
		return outbox.BulkResult{}, false, err
	}
	f, err := h.resolve(c.Request().Context(), req.query())
	if err != nil {
		return outbox.BulkResult{}, false, err
	}
	res, err := do(h.svc, c.Request().Context(), ops.Matching{Filter: f, DryRun: req.DryRun}, action(c, req.Reason))
	return res, req.DryRun, err
}

func (h handlers) retarget(c echo.Context) error {
	var req retargetRequest
	if err := decode(c, &req, "a retarget"); err != nil {
		return err
	}
	n, err := h.svc.Retarget(c.Request().Context(), req.From, action(c, req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retargetJSON{Retargeted: n})
}

func (h handlers) pause(c echo.Context) error {
	var req destinationRequest
	if err := decode(c, &req, "a destination"); err != nil {
		return err
	}
	if err := h.svc.Pause(c.Request().Context(), req.Destination, action(c, req.Reason)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, destinationJSON{Destination: req.Destination, Paused: true})
}

func (h handlers) resume(c echo.Context) error {
	var req destinationRequest
	if err := decode(c, &req, "a destination"); err != nil {
		return err
	}
	n, err := h.svc.Resume(c.Request().Context(), req.Destination, action(c, req.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, destinationJSON{Destination: req.Destination, Hastened: &n})
}

func (h handlers) audit(c echo.Context) error {
	q, err := parseAuditQuery(c.QueryParams())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if q.invoice != "" {
		id, err := h.svc.InvoiceID(ctx, q.invoice)
		if err != nil {
			return err
		}
		q.query.InvoiceID = &id
	}
	page, err := h.svc.Audit(ctx, q.query)
	if err != nil {
		return err
	}
	out := auditPageJSON{Items: audit.Views(page.Items)}
	if page.Next != nil {
		out.NextCursor = page.Next.String()
	}
	return c.JSON(http.StatusOK, out)
}

// action is the request's actor (the ops token's principal) with the reason it gave.
func action(c echo.Context, reason string) ops.Action {
	return ops.Action{Actor: auth.Principal(c), Reason: reason}
}

func (h handlers) trace(c echo.Context) error {
	t, err := h.svc.Trace(c.Request().Context(), c.Param("ref"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newTraceJSON(t))
}

// resolve turns the invoice of q (id or number) into the filter's aggregate key.
func (h handlers) resolve(ctx context.Context, q filterQuery) (outbox.Filter, error) {
	f := q.filter
	if q.invoice == "" {
		return f, nil
	}
	key, err := h.svc.AggregateKey(ctx, q.invoice)
	if err != nil {
		return outbox.Filter{}, err
	}
	f.AggregateKey = key
	return f, nil
}
