package opsweb

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/insight"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/outbox"
)

// failedOnOverview is how many of the newest failed events the overview lists.
const failedOnOverview = 50

type loginPage struct {
	Next   string
	Failed bool
}

type overviewPage struct {
	ops.Overview
	Failed []eventRow
	// MoreFailed reports that more failed events exist than are listed.
	MoreFailed bool
	// Window is the charts' window; Windows link to each window.
	Window  insight.Window
	Windows []windowLink
	Charts  []chartView
	Alerts  []alertRow
}

type windowLink struct {
	Label, URL string
	Current    bool
}

type eventsPage struct {
	Status, Type, Invoice string
	Rows                  []eventRow
	NextURL               string
}

type eventPage struct {
	eventRow
	AttemptLog []outbox.Attempt
}

func (d *Dashboard) loginForm(c echo.Context) error {
	return d.render(c, http.StatusOK, "login", view{Title: "Sign in", Data: loginPage{Next: safeNext(c.QueryParam("next"))}})
}

// login checks a token from the form body. The throttle decides first, so a client
// past its limit learns nothing about its token; a refused token stays counted as a
// failure, a correct one starts a session recorded for every replica.
func (d *Dashboard) login(c echo.Context) error {
	ctx := c.Request().Context()
	next := safeNext(formValue(c, "next"))
	attempt, err := d.cfg.SignIns.Admit(ctx, c.RealIP())
	var throttled *signin.ThrottledError
	if errors.As(err, &throttled) {
		d.cfg.Log.WarnContext(ctx, "dashboard login throttled", "remote", c.RealIP(),
			"everyone", throttled.Everyone, "retry_after_s", throttled.RetryAfter.Seconds())
	}
	if err != nil {
		return err
	}
	value, who, err := d.cfg.Tokens.Login(formValue(c, "token"), Role)
	if errors.Is(err, auth.ErrInvalidToken) || errors.Is(err, auth.ErrForbidden) {
		d.cfg.Log.WarnContext(ctx, "dashboard login refused", "remote", c.RealIP(), "err", err)
		return d.render(c, http.StatusUnauthorized, "login", view{Title: "Sign in", Data: loginPage{Next: next, Failed: true}})
	}
	if err != nil {
		return err
	}
	if err := d.cfg.SignIns.Start(ctx, attempt, value, who, d.cfg.SessionTTL); err != nil {
		return err
	}
	d.setSession(c, value)
	d.cfg.Log.InfoContext(ctx, "dashboard login", "principal", who, "remote", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

// logout ends the session's record, so its cookie is refused by every replica from
// now on, wherever a copy of it went.
func (d *Dashboard) logout(c echo.Context) error {
	ck, err := c.Cookie(cookieName)
	if err != nil {
		return err
	}
	if err := d.cfg.SignIns.End(c.Request().Context(), ck.Value); err != nil {
		return err
	}
	d.clearSession(c)
	return c.Redirect(http.StatusSeeOther, LoginPath)
}

func (d *Dashboard) overview(c echo.Context) error {
	ctx := c.Request().Context()
	ov, err := d.cfg.Service.Overview(ctx)
	if err != nil {
		return err
	}
	failed, err := d.cfg.Service.Events(ctx, outbox.Filter{Status: outbox.StatusFailed, Limit: failedOnOverview})
	if err != nil {
		return err
	}
	p := overviewPage{Overview: ov, MoreFailed: failed.Next != nil, Window: insight.WindowOf(c.QueryParam("range"))}
	if p.Failed, err = d.eventRows(ctx, failed.Items); err != nil {
		return err
	}
	ch, err := d.cfg.Insight.Charts(ctx, p.Window)
	if err != nil {
		return err
	}
	p.Charts = charts(ch, d.cfg.PendingAge)
	if p.Alerts, err = d.alertRows(ctx); err != nil {
		return err
	}
	for _, w := range []insight.Window{insight.Hour, insight.Day} {
		q := url.Values{"range": {w.Key}}
		if r := c.QueryParam("refresh"); r != "" {
			q.Set("refresh", r)
		}
		p.Windows = append(p.Windows, windowLink{Label: "last " + span(w), URL: BasePath + "?" + q.Encode(), Current: w == p.Window})
	}
	return d.render(c, http.StatusOK, "overview", view{Title: "Overview", Data: p})
}

func (d *Dashboard) events(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	p := eventsPage{Status: q.Get("status"), Type: strings.TrimSpace(q.Get("type")), Invoice: strings.TrimSpace(q.Get("invoice"))}
	f := outbox.Filter{Status: p.Status, Type: p.Type}
	if p.Invoice != "" {
		key, err := d.cfg.Service.AggregateKey(ctx, p.Invoice)
		if err != nil {
			return err
		}
		f.AggregateKey = key
	}
	if s := q.Get("cursor"); s != "" {
		cur, err := outbox.ParseCursor(s)
		if err != nil {
			return err
		}
		f.After = &cur
	}
	page, err := d.cfg.Service.Events(ctx, f)
	if err != nil {
		return err
	}
	if p.Rows, err = d.eventRows(ctx, page.Items); err != nil {
		return err
	}
	if page.Next != nil {
		p.NextURL = EventsPath(url.Values{"status": {p.Status}, "type": {p.Type}, "invoice": {p.Invoice},
			"cursor": {page.Next.String()}})
	}
	return d.render(c, http.StatusOK, "events", view{Title: "Events", Data: p})
}

func (d *Dashboard) event(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return outbox.ErrNotFound
	}
	ctx := c.Request().Context()
	ev, err := d.cfg.Service.Event(ctx, id)
	if err != nil {
		return err
	}
	rows, err := d.eventRows(ctx, []outbox.StoredEvent{ev.StoredEvent})
	if err != nil {
		return err
	}
	v := view{Title: "Event " + ev.EventType, Data: eventPage{eventRow: rows[0], AttemptLog: ev.AttemptLog}}
	if c.QueryParam("retried") == "1" {
		v.Notice = "Replayed: the event is due now with a fresh budget, and the dispatchers were woken."
	}
	return d.render(c, http.StatusOK, "event", v)
}

func (d *Dashboard) retry(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return outbox.ErrNotFound
	}
	if _, err := d.cfg.Service.Retry(c.Request().Context(), id, principal(c)); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, EventPath(id)+"?retried=1")
}

func (d *Dashboard) search(c echo.Context) error {
	ref := strings.TrimSpace(c.QueryParam("q"))
	if ref == "" {
		return c.Redirect(http.StatusSeeOther, BasePath)
	}
	return c.Redirect(http.StatusSeeOther, TracePath(ref))
}

func (d *Dashboard) trace(c echo.Context) error {
	t, err := d.cfg.Service.Trace(c.Request().Context(), c.Param("ref"))
	if err != nil {
		return err
	}
	return d.render(c, http.StatusOK, "trace", view{Title: "Invoice " + t.Invoice.Number, Data: newTraceView(t)})
}
