package opsweb

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/insight"
	"handoff/finance/internal/ops"
	"handoff/finance/internal/signin"
	"handoff/pkg/integrationkit/auth"
	"handoff/pkg/integrationkit/breaker"
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
	// Destinations are the current destination, every destination with a circuit
	// and every one undelivered events are addressed to.
	Destinations []destinationRow
}

// destinationRow is a destination with its circuit and undelivered events.
type destinationRow struct {
	breaker.Circuit
	URL string
	// Current reports that new events go here (LOGISTICS_WEBHOOK_URL).
	Current         bool
	Pending, Failed int
}

// Paused reports whether an operator paused the destination.
func (r destinationRow) Paused() bool { return r.PausedAt != nil }

// inapplicable says why action (pause, resume, retarget) does not apply to the
// destination now; "" when it does.
func (r destinationRow) inapplicable(action string) string {
	switch {
	case action == audit.Pause && r.Paused():
		return "The destination is paused already."
	case action == audit.Resume && !r.Paused():
		return "The destination is not paused."
	case action == audit.Retarget && r.Current:
		return "This is the current destination (LOGISTICS_WEBHOOK_URL): there is nowhere to move its events."
	case action == audit.Retarget && r.Pending+r.Failed == 0:
		return "No undelivered event is addressed to this destination."
	}
	return ""
}

type windowLink struct {
	Label, URL string
	Current    bool
}

type eventsPage struct {
	Status, Type, Invoice string
	Rows                  []eventRow
	NextURL               string
	// RetryAllURL and SkipAllURL lead to the confirmation of an action on every event
	// the filter selects, when its status allows one.
	RetryAllURL, SkipAllURL string
}

type eventPage struct {
	eventRow
	AttemptLog []outbox.Attempt
	// Actions are the operator actions that changed the event, oldest first.
	Actions []audit.Entry
	// RetargetURL leads to the retarget of the event's destination, when it is
	// undelivered and addressed to an old destination.
	RetargetURL string
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
	// The rollup runs every 15 s; rolled up now, the charts include this very minute.
	// It takes milliseconds, and a failure only leaves them as of the last roll.
	if err := d.cfg.Insight.Roll(ctx); err != nil {
		d.cfg.Log.WarnContext(ctx, "chart rollup failed", "err", err)
	}
	ch, err := d.cfg.Insight.Charts(ctx, p.Window)
	if err != nil {
		return err
	}
	p.Charts = charts(ch, d.cfg.PendingAge)
	if p.Alerts, err = d.alertRows(ctx); err != nil {
		return err
	}
	if p.Destinations, err = d.destinationRows(ctx, ov.Circuits); err != nil {
		return err
	}
	for _, w := range []insight.Window{insight.Hour, insight.Day} {
		q := url.Values{"range": {w.Key}}
		if r := c.QueryParam("refresh"); r != "" {
			q.Set("refresh", r)
		}
		p.Windows = append(p.Windows, windowLink{Label: "last " + span(w), URL: BasePath + "?" + q.Encode(), Current: w == p.Window})
	}
	v := view{Title: "Overview", Data: p}
	if a, ok := destinationActions[c.QueryParam("done")]; ok {
		v.Notice = a.done
	}
	return d.render(c, http.StatusOK, "overview", v)
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
	for name, a := range bulkActions {
		if !slices.Contains(a.statuses, p.Status) {
			continue
		}
		u := BulkPath(name, bulkFilter{Status: p.Status, Type: p.Type, Invoice: p.Invoice}.values())
		if name == audit.Retry {
			p.RetryAllURL = u
		} else {
			p.SkipAllURL = u
		}
	}
	return d.render(c, http.StatusOK, "events", view{Title: "Events", Data: p, Notice: bulkNotice(q)})
}

// eventDetail reads the event id with its row: its invoice's number and the failed
// event holding it back.
func (d *Dashboard) eventDetail(ctx context.Context, id uuid.UUID) (outbox.EventDetail, eventRow, error) {
	ev, err := d.cfg.Service.Event(ctx, id)
	if err != nil {
		return outbox.EventDetail{}, eventRow{}, err
	}
	rows, err := d.eventRows(ctx, []outbox.StoredEvent{ev.StoredEvent})
	if err != nil {
		return outbox.EventDetail{}, eventRow{}, err
	}
	return ev, rows[0], nil
}

func (d *Dashboard) event(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return outbox.ErrNotFound
	}
	ctx := c.Request().Context()
	ev, row, err := d.eventDetail(ctx, id)
	if err != nil {
		return err
	}
	actions, err := d.cfg.Service.EventActions(ctx, id)
	if err != nil {
		return err
	}
	p := eventPage{eventRow: row, AttemptLog: ev.AttemptLog, Actions: actions}
	if cur := d.cfg.Service.Destination(); cur != "" && ev.Destination != cur &&
		(ev.Status == outbox.StatusPending || ev.Status == outbox.StatusFailed) {
		p.RetargetURL = DestinationPath(audit.Retarget, ev.Destination)
	}
	v := view{Title: "Event " + ev.EventType, Data: p}
	if a, ok := eventActions[c.QueryParam("done")]; ok && p.shows(c.QueryParam("done")) {
		v.Notice = a.done
	}
	return d.render(c, http.StatusOK, "event", v)
}

// shows reports whether the notice of action, just done on the event, is still true
// of it: a link that names an action the event does not reflect shows no notice.
func (p eventPage) shows(action string) bool {
	if action == audit.Skip {
		return p.Status == outbox.StatusSkipped
	}
	return p.Status == outbox.StatusPending || p.Status == outbox.StatusDelivered
}

// destinationRows merges the current destination, the circuits and the destinations
// of undelivered events into one row each, the current destination first.
func (d *Dashboard) destinationRows(ctx context.Context, circuits []breaker.Circuit) ([]destinationRow, error) {
	undelivered, err := d.cfg.Insight.Destinations(ctx)
	if err != nil {
		return nil, err
	}
	var rows []destinationRow
	row := func(url string) *destinationRow {
		for i := range rows {
			if rows[i].URL == url {
				return &rows[i]
			}
		}
		rows = append(rows, destinationRow{URL: url, Circuit: breaker.Circuit{State: breaker.Closed}})
		return &rows[len(rows)-1]
	}
	if cur := d.cfg.Service.Destination(); cur != "" {
		row(cur).Current = true
	}
	for _, c := range circuits {
		r := row(c.Destination)
		r.Circuit = c
	}
	for _, u := range undelivered {
		r := row(u.URL)
		r.Pending, r.Failed = u.Pending, u.Failed
	}
	return rows, nil
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
