package opsweb

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"handoff/finance/internal/invoice"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/problem"
)

var (
	// errForbidden refuses a request that is not from the dashboard's own pages.
	errForbidden = errors.New("opsweb: request refused")
	// errMisdirected refuses a request addressed to a host that is not the dashboard's.
	errMisdirected = errors.New("opsweb: request for another host")
)

// pageErrors maps the errors handlers return to the page shown, in this one place.
// The rules leave Slug empty: a page shows its Detail to the operator.
var pageErrors = problem.Table{
	problem.When(errForbidden, http.StatusForbidden, "", "This request did not come from a dashboard page of this server. Reload the page and try again."),
	problem.When(errMisdirected, http.StatusMisdirectedRequest, "", "The dashboard is not served under this name. Use the address in DASHBOARD_URL."),
	problem.When(outbox.ErrNotFound, http.StatusNotFound, "", "No outbox event has this id."),
	problem.When(outbox.ErrDelivered, http.StatusConflict, "", "The event is delivered; Resend sends it again under its key."),
	problem.When(outbox.ErrSkipped, http.StatusConflict, "", "An operator skipped this event; it is never sent again."),
	problem.When(outbox.ErrNotDeadLetter, http.StatusConflict, "", "Only a dead letter (a failed event) can be skipped."),
	problem.When(outbox.ErrNotDelivered, http.StatusConflict, "", "Only a delivered event can be resent; retry a failed or pending one."),
	problem.When(ops.ErrPaused, http.StatusConflict, "", "The destination is paused already."),
	problem.When(ops.ErrNotPaused, http.StatusConflict, "", "The destination is not paused."),
	problem.When(errUnknownDestination, http.StatusNotFound, "", "The dashboard lists no such destination: not the current one, none with a circuit, none with undelivered events."),
	problem.When(outbox.ErrInFlight, http.StatusConflict, "", "A dispatcher is sending this event right now. Look again in a moment."),
	problem.When(invoice.ErrNotFound, http.StatusNotFound, "", "No invoice has this id or number."),
}

type errorPage struct {
	Status  int
	Message string
	// RetryAfter, when positive, is sent as the Retry-After header, in seconds.
	RetryAfter int
}

// renderErrors shows the error a handler returned as a page. Known errors say what
// happened; anything else is logged and shown as a plain 500.
func (d *Dashboard) renderErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		page := d.pageFor(c, err)
		if page.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(page.RetryAfter))
		}
		if rerr := d.render(c, page.Status, "error", view{Title: http.StatusText(page.Status), Data: page}); rerr != nil {
			return errors.Join(err, rerr)
		}
		return nil
	}
}

func (d *Dashboard) pageFor(c echo.Context, err error) errorPage {
	var he *echo.HTTPError
	var fe *outbox.FilterError
	var invalid *invoice.ValidationError
	var throttled *signin.ThrottledError
	switch {
	case errors.As(err, &he) && he.Code < 500:
		return errorPage{Status: he.Code, Message: http.StatusText(he.Code)}
	case errors.As(err, &fe):
		return errorPage{Status: http.StatusBadRequest, Message: "The " + fe.Field + " " + fe.Detail + "."}
	case errors.As(err, &invalid):
		return errorPage{Status: http.StatusBadRequest, Message: "Search for an invoice by its number (INV-004711 or 4711) or its id."}
	case errors.As(err, &throttled):
		secs := int(throttled.RetryAfter.Seconds())
		who := "from your address"
		if throttled.Everyone {
			who = "from everywhere"
		}
		return errorPage{Status: http.StatusTooManyRequests, RetryAfter: secs,
			Message: fmt.Sprintf("Too many wrong tokens %s. Try again in %d seconds.", who, secs)}
	}
	if r, ok := pageErrors.Match(err); ok {
		return errorPage{Status: r.Status, Message: r.Detail}
	}
	d.cfg.Log.ErrorContext(c.Request().Context(), "dashboard request failed", "err", err,
		"method", c.Request().Method, "path", c.Path())
	return errorPage{Status: http.StatusInternalServerError, Message: "Something went wrong on the server; it is logged."}
}
