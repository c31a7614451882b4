package opsweb

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/ops"
	"handoff/pkg/integrationkit/outbox"
)

// An operator action takes two steps, without a script: a link opens its confirmation
// page (GET), which says what the action will do (for an action by filter, with a dry
// run's count) and asks why; the form there posts the action with its reason and the
// session's CSRF token. The action runs through ops.Service, which records it in the
// audit log in the change's own transaction, under the signed-in principal. A
// refused reason shows the confirmation page again with the refusal.

// reasonField is the form field of an action's reason.
const reasonField = "reason"

// confirmPage asks an operator to confirm an action and say why.
type confirmPage struct {
	Heading string
	// Explain says what the action does and what it does not.
	Explain string
	// Post is where the form goes; Fields are carried there unchanged.
	Post   string
	Fields []formField
	Button string
	// Danger marks an action that gives something up (skip).
	Danger bool
	Cancel string
	// Event is the event acted on, for an action on one event.
	Event *eventRow
	// Filter describes the events an action by filter selects; DryRun is what a dry
	// run counted of them just now.
	Filter string
	DryRun *outbox.BulkResult
	// Reason is the reason typed so far; Refused says why it was not taken.
	Reason, Refused string
	// Note warns of a consequence particular to this event or destination.
	Note string
	// Inapplicable says why the action does not apply now; the page then offers no
	// form.
	Inapplicable string
}

type formField struct{ Name, Value string }

// eventAction is an action on one event.
type eventAction struct {
	button, explain, done string
	danger                bool
	do                    func(*ops.Service, context.Context, uuid.UUID, ops.Action) (outbox.StoredEvent, error)
}

var eventActions = map[string]eventAction{
	audit.Retry: {button: "Retry", do: (*ops.Service).RetryEvent,
		explain: "The event becomes due now with a fresh budget of attempts, and the dispatchers are woken; " +
			"its history stays. Retry once the cause of its failure is fixed.",
		done: "Replayed: the event is due now with a fresh budget, and the dispatchers were woken."},
	audit.Skip: {button: "Skip", danger: true, do: (*ops.Service).Skip,
		explain: "The dead letter is given up: it is never sent again, its invoice's later events are sent " +
			"without it, and reconciliation counts it as resolved. Logistics never learns of this event, so " +
			"skip it only when logistics needs it no more (it was rejected for good, or fixed there by hand).",
		done: "Skipped: the event is never sent again, and its invoice's later events go on."},
	audit.Resend: {button: "Resend", do: (*ops.Service).Resend,
		explain: "The delivered event is sent again under its idempotency key. A receiver that still has the " +
			"key answers duplicate and changes nothing; one that lost it applies the event again.",
		done: "Resent: the event is due now under its idempotency key, and the dispatchers were woken."},
}

// confirmEvent shows the confirmation page of an action on one event.
func (d *Dashboard) confirmEvent(c echo.Context) error {
	id, a, name, err := eventActionOf(c)
	if err != nil {
		return err
	}
	return d.renderEventConfirm(c, http.StatusOK, id, name, a, "", "")
}

func (d *Dashboard) renderEventConfirm(c echo.Context, status int, id uuid.UUID, name string, a eventAction, reason, refused string) error {
	ev, row, err := d.eventDetail(c.Request().Context(), id)
	if err != nil {
		return err
	}
	p := confirmPage{
		Heading: a.button + " " + ev.EventType + " #" + strconv.FormatInt(ev.Sequence, 10) + " of " + row.Invoice + "?",
		Explain: a.explain, Post: EventPath(id) + "/" + name, Button: a.button, Danger: a.danger,
		Cancel: EventPath(id), Event: &row, Reason: reason, Refused: refused,
	}
	if !row.can(name) {
		p.Inapplicable = inapplicable(row, name)
	}
	if cur := d.cfg.Service.Destination(); name == audit.Resend && cur != "" && ev.Destination != cur {
		p.Note = "This event is addressed to " + ev.Destination + ", not to the current destination " + cur +
			": a resend goes there. Retarget that destination afterwards if it is gone."
	}
	return d.render(c, status, "confirm", view{Title: a.button + " event", Data: p})
}

// inapplicable says why action does not apply to r now.
func inapplicable(r eventRow, action string) string {
	switch {
	case r.InFlight:
		return "A dispatcher is sending this event right now. Look again in a moment."
	case r.Status == outbox.StatusSkipped:
		return "An operator skipped this event: it is never sent again."
	case action == audit.Resend:
		return "Only a delivered event can be resent; this one is " + r.Status + "."
	case action == audit.Skip:
		return "Only a dead letter (a failed event) can be skipped; this one is " + r.Status + "."
	case r.Status == outbox.StatusDelivered:
		return "The event is delivered: Resend sends it again under its key."
	case r.WaitingFor != nil:
		return "This event waits for an earlier failed event of its invoice: retry or skip that one."
	case r.Paused():
		return "Its destination is paused: resume it, and the event goes at once."
	case r.Deferred():
		return "The open circuit of its destination holds it: it goes when the circuit lets a probe through."
	}
	return "The action does not apply to this event now."
}

// actOnEvent carries out an action on one event and shows the event.
func (d *Dashboard) actOnEvent(c echo.Context) error {
	id, a, name, err := eventActionOf(c)
	if err != nil {
		return err
	}
	reason := formValue(c, reasonField)
	_, err = a.do(d.cfg.Service, c.Request().Context(), id, ops.Action{Actor: principal(c), Reason: reason})
	if refused, status, ok := refusal(err); ok {
		return d.renderEventConfirm(c, status, id, name, a, reason, refused)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, EventPath(id)+"?done="+name)
}

func eventActionOf(c echo.Context) (uuid.UUID, eventAction, string, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, eventAction{}, "", outbox.ErrNotFound
	}
	name := c.Param("action")
	a, ok := eventActions[name]
	if !ok {
		return uuid.Nil, eventAction{}, "", echo.ErrNotFound
	}
	return id, a, name, nil
}

// refusal returns what stopped an action the service refused and the status to show
// its confirmation page with: what the operator must correct (400), or a state the
// event or destination is in now, perhaps since another operator acted (409).
func refusal(err error) (string, int, bool) {
	var bad *ops.ValidationError
	var fe *outbox.FilterError
	switch {
	case errors.As(err, &bad):
		return "The " + bad.Field + " " + bad.Detail + ".", http.StatusBadRequest, true
	case errors.As(err, &fe):
		return "The " + fe.Field + " " + fe.Detail + ".", http.StatusBadRequest, true
	}
	if r, ok := pageErrors.Match(err); ok && r.Status == http.StatusConflict {
		return r.Detail + " Nothing was changed or recorded.", http.StatusConflict, true
	}
	return "", 0, false
}

// bulkAction is an action on every event a filter selects.
type bulkAction struct {
	verb, button, explain string
	danger                bool
	// statuses are the statuses the action takes; the first is its default.
	statuses []string
	do       func(*ops.Service, context.Context, ops.Matching, ops.Action) (outbox.BulkResult, error)
}

var bulkActions = map[string]bulkAction{
	audit.Retry: {verb: "Retry", button: "Retry all", statuses: []string{outbox.StatusFailed, outbox.StatusPending},
		do: (*ops.Service).RetryMatching,
		explain: "Every matching event becomes due now with a fresh budget of attempts, oldest first, up to " +
			strconv.Itoa(outbox.DefaultRetryLimit) + " at a time; their history stays. Events in flight are left alone, " +
			"and events held by a paused destination stay held until it is resumed."},
	audit.Skip: {verb: "Skip", button: "Skip all", danger: true, statuses: []string{outbox.StatusFailed},
		do: (*ops.Service).SkipMatching,
		explain: "Every matching dead letter is given up: never sent again, its invoice's later events are sent " +
			"without it, and reconciliation counts it as resolved. Logistics never learns of these events."},
}

// bulkFilter is a filter of the events list, as a bulk action takes it from a query
// or a form.
type bulkFilter struct{ Status, Type, Invoice string }

func (f bulkFilter) values() url.Values {
	q := url.Values{"status": {f.Status}}
	if f.Type != "" {
		q.Set("type", f.Type)
	}
	if f.Invoice != "" {
		q.Set("invoice", f.Invoice)
	}
	return q
}

func (f bulkFilter) describe() string {
	s := "every " + f.Status + " event"
	if f.Type != "" {
		s += " of type " + f.Type
	}
	if f.Invoice != "" {
		s += " of invoice " + f.Invoice
	}
	return s
}

// BulkPath is the confirmation page of action (retry or skip) on the events query
// selects, e.g. url.Values{"status": {"failed"}}.
func BulkPath(action string, query url.Values) string {
	return BasePath + "bulk/" + action + "?" + query.Encode()
}

// bulkOf reads the action and its filter, from the query (get) or the form.
func bulkOf(c echo.Context, get func(string) string) (string, bulkAction, bulkFilter, error) {
	name := c.Param("action")
	a, ok := bulkActions[name]
	if !ok {
		return "", bulkAction{}, bulkFilter{}, echo.ErrNotFound
	}
	f := bulkFilter{Status: get("status"), Type: get("type"), Invoice: get("invoice")}
	if f.Status == "" {
		f.Status = a.statuses[0]
	}
	if !slices.Contains(a.statuses, f.Status) {
		return "", bulkAction{}, bulkFilter{}, &outbox.FilterError{Field: "status", Detail: "cannot be " + f.Status + " for this action"}
	}
	return name, a, f, nil
}

func (d *Dashboard) matching(ctx context.Context, f bulkFilter) (outbox.Filter, error) {
	out := outbox.Filter{Status: f.Status, Type: f.Type}
	if f.Invoice != "" {
		key, err := d.cfg.Service.AggregateKey(ctx, f.Invoice)
		if err != nil {
			return outbox.Filter{}, err
		}
		out.AggregateKey = key
	}
	return out, nil
}

// confirmBulk shows the confirmation page of an action by filter, with a dry run's
// count of the events it would change now.
func (d *Dashboard) confirmBulk(c echo.Context) error {
	name, a, f, err := bulkOf(c, c.QueryParam)
	if err != nil {
		return err
	}
	return d.renderBulkConfirm(c, http.StatusOK, name, a, f, "", "")
}

func (d *Dashboard) renderBulkConfirm(c echo.Context, status int, name string, a bulkAction, f bulkFilter, reason, refused string) error {
	ctx := c.Request().Context()
	filter, err := d.matching(ctx, f)
	if err != nil {
		return err
	}
	// A dry run changes and records nothing; its action is checked all the same, so
	// it needs an actor and a reason.
	dry, err := a.do(d.cfg.Service, ctx, ops.Matching{Filter: filter, DryRun: true},
		ops.Action{Actor: principal(c), Reason: "dry run for the dashboard's confirmation page"})
	if err != nil {
		return err
	}
	p := confirmPage{
		Heading: a.verb + " " + f.describe() + "?", Explain: a.explain, Post: BasePath + "bulk/" + name,
		Button: a.button, Danger: a.danger, Cancel: EventsPath(f.values()), Filter: f.describe(), DryRun: &dry,
		Reason: reason, Refused: refused,
	}
	for _, k := range []string{"status", "type", "invoice"} {
		if v := f.values().Get(k); v != "" {
			p.Fields = append(p.Fields, formField{Name: k, Value: v})
		}
	}
	return d.render(c, status, "confirm", view{Title: a.button, Data: p})
}

// actOnMatching carries out an action by filter and lists the events it selected.
func (d *Dashboard) actOnMatching(c echo.Context) error {
	name, a, f, err := bulkOf(c, func(k string) string { return formValue(c, k) })
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	filter, err := d.matching(ctx, f)
	if err != nil {
		return err
	}
	reason := formValue(c, reasonField)
	res, err := a.do(d.cfg.Service, ctx, ops.Matching{Filter: filter}, ops.Action{Actor: principal(c), Reason: reason})
	if refused, status, ok := refusal(err); ok {
		return d.renderBulkConfirm(c, status, name, a, f, reason, refused)
	}
	if err != nil {
		return err
	}
	q := f.values()
	q.Set("done", name)
	q.Set("count", strconv.Itoa(res.Count))
	if res.More {
		q.Set("more", "1")
	}
	return c.Redirect(http.StatusSeeOther, EventsPath(q))
}

// bulkNotice says what an action by filter did, from the list's query.
func bulkNotice(q url.Values) string {
	n, err := strconv.Atoi(q.Get("count"))
	if err != nil || n < 0 {
		return ""
	}
	var s string
	switch q.Get("done") {
	case audit.Retry:
		s = "Replayed " + strconv.Itoa(n) + " events: they are due now with a fresh budget."
	case audit.Skip:
		s = "Skipped " + strconv.Itoa(n) + " dead letters: they are never sent again."
	default:
		return ""
	}
	if q.Get("more") == "1" {
		s += " More match: run it again for the next ones."
	}
	return s
}

// destinationAction is an action on a destination: pause, resume or retarget.
type destinationAction struct {
	button, explain, done string
	danger                bool
	do                    func(d *Dashboard, ctx context.Context, dest string, act ops.Action) error
}

var destinationActions = map[string]destinationAction{
	audit.Pause: {button: "Pause", danger: true,
		explain: "No replica sends anything to this destination from its next request until it is resumed; " +
			"events wait, pending, and nothing is lost. The pending-age alert keeps counting.",
		done: "Paused: no replica sends to that destination until it is resumed.",
		do: func(d *Dashboard, ctx context.Context, dest string, act ops.Action) error {
			return d.cfg.Service.Pause(ctx, dest, act)
		}},
	audit.Resume: {button: "Resume",
		explain: "Deliveries to this destination start again; the events its pause held back are due at once.",
		done:    "Resumed: deliveries to that destination go again.",
		do: func(d *Dashboard, ctx context.Context, dest string, act ops.Action) error {
			_, err := d.cfg.Service.Resume(ctx, dest, act)
			return err
		}},
	audit.Retarget: {button: "Retarget",
		explain: "Every pending and failed event addressed to this old destination is addressed to the current " +
			"one (LOGISTICS_WEBHOOK_URL) instead, all due now with a fresh budget, dead letters included.",
		done: "Retargeted: the undelivered events of that destination now go to the current one.",
		do: func(d *Dashboard, ctx context.Context, dest string, act ops.Action) error {
			_, err := d.cfg.Service.Retarget(ctx, dest, act)
			return err
		}},
}

// DestinationPath is the confirmation page of action (pause, resume, retarget) on
// dest.
func DestinationPath(action, dest string) string {
	return BasePath + "destinations/" + action + "?" + url.Values{"destination": {dest}}.Encode()
}

func destinationActionOf(c echo.Context) (string, destinationAction, error) {
	name := c.Param("action")
	a, ok := destinationActions[name]
	if !ok {
		return "", destinationAction{}, echo.ErrNotFound
	}
	return name, a, nil
}

func (d *Dashboard) confirmDestination(c echo.Context) error {
	name, a, err := destinationActionOf(c)
	if err != nil {
		return err
	}
	return d.renderDestinationConfirm(c, http.StatusOK, name, a, c.QueryParam("destination"), "", "")
}

func (d *Dashboard) renderDestinationConfirm(c echo.Context, status int, name string, a destinationAction, dest, reason, refused string) error {
	row, err := d.destination(c.Request().Context(), dest)
	if err != nil {
		return err
	}
	heading := a.button + " deliveries to " + row.URL + "?"
	if name == audit.Retarget {
		heading = "Retarget the undelivered events of " + row.URL + " to " + d.cfg.Service.Destination() + "?"
	}
	p := confirmPage{Heading: heading, Explain: a.explain, Post: BasePath + "destinations/" + name, Button: a.button,
		Danger: a.danger, Cancel: BasePath + "#circuits", Fields: []formField{{Name: "destination", Value: row.URL}},
		Reason: reason, Refused: refused, Inapplicable: row.inapplicable(name)}
	if name == audit.Retarget {
		p.Note = strconv.Itoa(row.Pending) + " pending and " + strconv.Itoa(row.Failed) + " failed events are addressed to it now."
	}
	return d.render(c, status, "confirm", view{Title: a.button, Data: p})
}

// errUnknownDestination refuses an action on a destination the dashboard does not
// list: not the current one, without a circuit and without undelivered events.
var errUnknownDestination = errors.New("opsweb: no such destination")

// destination returns the row of the Destinations panel for dest.
func (d *Dashboard) destination(ctx context.Context, dest string) (destinationRow, error) {
	circuits, err := d.cfg.Service.Circuits(ctx)
	if err != nil {
		return destinationRow{}, err
	}
	rows, err := d.destinationRows(ctx, circuits)
	if err != nil {
		return destinationRow{}, err
	}
	for _, r := range rows {
		if r.URL == dest {
			return r, nil
		}
	}
	return destinationRow{}, errUnknownDestination
}

func (d *Dashboard) actOnDestination(c echo.Context) error {
	name, a, err := destinationActionOf(c)
	if err != nil {
		return err
	}
	dest, reason := formValue(c, "destination"), formValue(c, reasonField)
	row, err := d.destination(c.Request().Context(), dest)
	if err != nil {
		return err
	}
	if why := row.inapplicable(name); why != "" {
		return d.renderDestinationConfirm(c, http.StatusConflict, name, a, dest, reason, why+" Nothing was changed or recorded.")
	}
	err = a.do(d, c.Request().Context(), dest, ops.Action{Actor: principal(c), Reason: reason})
	if refused, status, ok := refusal(err); ok {
		return d.renderDestinationConfirm(c, status, name, a, dest, reason, refused)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, BasePath+"?done="+name)
}

// auditPage is a page of the audit log.
type auditPage struct {
	Entries []audit.Entry
	NextURL string
}

func (d *Dashboard) auditLog(c echo.Context) error {
	q := audit.Query{Limit: audit.DefaultLimit}
	if s := c.QueryParam("cursor"); s != "" {
		cur, err := audit.ParseCursor(s)
		if err != nil {
			return &outbox.FilterError{Field: "cursor", Detail: "is not a cursor of the audit log"}
		}
		q.After = &cur
	}
	page, err := d.cfg.Service.Audit(c.Request().Context(), q)
	if err != nil {
		return err
	}
	p := auditPage{Entries: page.Items}
	if page.Next != nil {
		p.NextURL = BasePath + "audit?" + url.Values{"cursor": {page.Next.String()}}.Encode()
	}
	return d.render(c, http.StatusOK, "audit", view{Title: "Audit log", Data: p})
}
