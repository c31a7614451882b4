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
	var bad invalidQuery
	var ok bool
	if out.filter.CreatedFrom, ok = parseTime(q.Get("from")); !ok {
		bad.add("from", "must be an RFC 3339 time such as 2030-01-02T03:04:05Z")
	}
	if out.filter.CreatedTo, ok = parseTime(q.Get("to")); !ok {
		bad.add("to", "must be an RFC 3339 time such as 2030-01-02T03:04:05Z")
	}
	out.filter.Limit, out.filter.After = parsePage(q, outbox.MaxListLimit, outbox.ParseCursor, &bad)
	if err := bad.err(); err != nil {
		return filterQuery{}, err
	}
	return out, nil
}

// invalidQuery collects what is wrong with a query's parameters.
type invalidQuery []problem.FieldError

func (b *invalidQuery) add(name, detail string) {
	*b = append(*b, problem.FieldError{Field: name, Detail: detail})
}

// err is the problem listing them all; nil when there are none.
func (b invalidQuery) err() error {
	if len(b) == 0 {
		return nil
	}
	return problem.Invalid("the query is not valid", b...)
}

// parsePage reads ?limit=&cursor= of a list whose pages hold at most maxLimit and
// whose cursors parse reads; what is malformed is added to bad.
func parsePage[C any](q url.Values, maxLimit int, parse func(string) (C, error), bad *invalidQuery) (limit int, after *C) {
	if s := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			bad.add("limit", "must be an integer between 1 and "+strconv.Itoa(maxLimit))
		}
		limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, err := parse(s)
		if err != nil {
			bad.add("cursor", "is not a cursor of this list")
		}
		after = &c
	}
	return limit, after
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
	var bad invalidQuery
	if s := q.Get("event_id"); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			bad.add("event_id", "must be an event id (a UUID)")
		}
		out.query.EventID = &id
	}
	out.query.Limit, out.query.After = parsePage(q, audit.MaxLimit, audit.ParseCursor, &bad)
	if err := bad.err(); err != nil {
		return auditQuery{}, err
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
