package opsapi

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/finance/internal/audit"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

// maxBodyBytes bounds a request body; a filter with its reason is a few KiB at most.
const maxBodyBytes = 64 << 10

// filterQuery is a filter as the client wrote it, before the invoice is resolved.
type filterQuery struct {
	filter  outbox.Filter
	invoice string
}

// listParams are the query parameters of the event list; the route refuses any other.
var listParams = []string{"status", "type", "invoice_id", "from", "to", "limit", "cursor"}

// parseListQuery reads ?status=&type=&invoice_id=&from=&to=&limit=&cursor=; values not
// even of the right form are refused here, the store checks the rest.
func parseListQuery(q url.Values) (filterQuery, error) {
	out := filterQuery{
		filter:  outbox.Filter{Status: q.Get("status"), Type: q.Get("type")},
		invoice: q.Get("invoice_id"),
	}
	var bad []problem.FieldError
	field := func(name, detail string) { bad = append(bad, problem.FieldError{Field: name, Detail: detail}) }
	var ok bool
	if out.filter.CreatedFrom, ok = parseTime(q.Get("from")); !ok {
		field("from", "must be an RFC 3339 time such as 2030-01-02T03:04:05Z")
	}
	if out.filter.CreatedTo, ok = parseTime(q.Get("to")); !ok {
		field("to", "must be an RFC 3339 time such as 2030-01-02T03:04:05Z")
	}
	if s := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			field("limit", "must be an integer between 1 and "+strconv.Itoa(outbox.MaxListLimit))
		}
		out.filter.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, err := outbox.ParseCursor(s)
		if err != nil {
			field("cursor", "is not a cursor of this list")
		}
		out.filter.After = &c
	}
	if len(bad) > 0 {
		return filterQuery{}, problem.Invalid("the query is not valid", bad...)
	}
	return out, nil
}

// parseTime reads an optional RFC 3339 time; "" is the zero time.
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// filterRequest is the body of POST /v1/ops/outbox/retry and /v1/ops/outbox/skip:
// the filter of the list route, why, and whether it is a dry run.
type filterRequest struct {
	Status    string     `json:"status"`
	Type      string     `json:"type"`
	InvoiceID string     `json:"invoice_id"`
	From      *time.Time `json:"from"`
	To        *time.Time `json:"to"`
	Limit     int        `json:"limit"`
	Reason    string     `json:"reason"`
	DryRun    bool       `json:"dry_run"`
}

func (r filterRequest) query() filterQuery {
	f := outbox.Filter{Status: r.Status, Type: r.Type, Limit: r.Limit}
	if r.From != nil {
		f.CreatedFrom = *r.From
	}
	if r.To != nil {
		f.CreatedTo = *r.To
	}
	return filterQuery{filter: f, invoice: r.InvoiceID}
}

// reasonRequest is the body of an action on one event.
type reasonRequest struct {
	Reason string `json:"reason"`
}

// retargetRequest is the body of POST /v1/ops/outbox/retarget.
type retargetRequest struct {
	From   string `json:"from"`
	Reason string `json:"reason"`
}

// destinationRequest is the body of POST /v1/ops/destinations/pause and /resume.
type destinationRequest struct {
	Destination string `json:"destination"`
	Reason      string `json:"reason"`
}

// decode reads the body into v strictly (strict.Decode): JSON, one object whose
// members are v's fields named exactly and once each, nothing after it. An empty body
// leaves v zero (the service then names what is missing); what names the body in the
// problem's detail.
func decode(c echo.Context, v any, what string) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBodyBytes))
	if err != nil {
		return problem.Newf(http.StatusRequestEntityTooLarge, "body-too-large", "the body exceeds %d bytes", maxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
		return problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type", "send the body as application/json")
	}
	if err := strict.Decode(body, v); err != nil {
		return problem.New(http.StatusBadRequest, "malformed-json", "the body is not "+what+": "+err.Error())
	}
	return nil
}

// auditParams are the query parameters of the audit log; the route refuses any other.
var auditParams = []string{"event_id", "invoice_id", "limit", "cursor"}

// auditQuery is the audit log's query as the client wrote it, before the invoice is
// resolved.
type auditQuery struct {
	query   audit.Query
	invoice string
}

// parseAuditQuery reads ?event_id=&invoice_id=&limit=&cursor=; values not even of the
// right form are refused here, the service checks the rest.
func parseAuditQuery(q url.Values) (auditQuery, error) {
	out := auditQuery{invoice: q.Get("invoice_id")}
	var bad []problem.FieldError
	field := func(name, detail string) { bad = append(bad, problem.FieldError{Field: name, Detail: detail}) }
	if s := q.Get("event_id"); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			field("event_id", "must be an event id (a UUID)")
		}
		out.query.EventID = &id
	}
	if s := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			field("limit", "must be an integer between 1 and "+strconv.Itoa(audit.MaxLimit))
		}
		out.query.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, err := audit.ParseCursor(s)
		if err != nil {
			field("cursor", "is not a cursor of this list")
		}
		out.query.After = &c
	}
	if len(bad) > 0 {
		return auditQuery{}, problem.Invalid("the query is not valid", bad...)
	}
	return out, nil
}

// eventID reads the :id path parameter; a malformed id names no event (404).
func eventID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, outbox.ErrNotFound
	}
	return id, nil
}
