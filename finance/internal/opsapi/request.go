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

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

// maxBodyBytes bounds a request body; a retry filter is a few hundred bytes.
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

// retryRequest is the body of POST /v1/ops/outbox/retry.
type retryRequest struct {
	Status    string     `json:"status"`
	Type      string     `json:"type"`
	InvoiceID string     `json:"invoice_id"`
	From      *time.Time `json:"from"`
	To        *time.Time `json:"to"`
	Limit     int        `json:"limit"`
}

func (r retryRequest) query() filterQuery {
	f := outbox.Filter{Status: r.Status, Type: r.Type, Limit: r.Limit}
	if r.From != nil {
		f.CreatedFrom = *r.From
	}
	if r.To != nil {
		f.CreatedTo = *r.To
	}
	return filterQuery{filter: f, invoice: r.InvoiceID}
}

// decodeRetry reads a retryRequest strictly (strict.Decode): JSON, one object whose
// members are its fields named exactly and once each, nothing after it. An empty body
// is the empty filter (every failed event, up to the default limit).
func decodeRetry(c echo.Context) (retryRequest, error) {
	var req retryRequest
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBodyBytes))
	if err != nil {
		return req, problem.Newf(http.StatusRequestEntityTooLarge, "body-too-large", "the body exceeds %d bytes", maxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	if mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
		return req, problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type", "send the body as application/json")
	}
	if err := strict.Decode(body, &req); err != nil {
		return req, problem.New(http.StatusBadRequest, "malformed-json", "the body is not a retry filter: "+err.Error())
	}
	return req, nil
}

// eventID reads the :id path parameter; a malformed id names no event (404).
func eventID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, outbox.ErrNotFound
	}
	return id, nil
}
