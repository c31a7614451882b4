package opsapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

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
	return c.JSON(http.StatusOK, newStatsJSON(ov))
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
	d, err := h.svc.Event(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newDetailJSON(d, nil))
}

func (h handlers) retry(c echo.Context) error {
	id, err := eventID(c)
	if err != nil {
		return err
	}
	ev, err := h.svc.Retry(c.Request().Context(), id, auth.Principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newEventJSON(ev))
}

func (h handlers) retryMatching(c echo.Context) error {
	req, err := decodeRetry(c)
	if err != nil {
		return err
	}
	f, err := h.resolve(c.Request().Context(), req.query())
	if err != nil {
		return err
	}
	res, err := h.svc.RetryMatching(c.Request().Context(), f, auth.Principal(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, retryJSON{Retried: res.Count, More: res.More})
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
