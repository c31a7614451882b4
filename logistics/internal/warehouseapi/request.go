package warehouseapi

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/cursor"
	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"

	"handoff/logistics/internal/shipment"
)

// Page sizes of GET /v1/shipments.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

const (
	cursorVersion = "s1"
	maxMoveBody   = 16 << 10
)

// listParams are the query parameters of the list; the route refuses any other.
var listParams = []string{"state", "invoice_id", "limit", "cursor"}

type listQuery struct {
	filter shipment.Filter
	limit  int
}

// parseListQuery reads state, invoice_id, limit and cursor; every bad value is
// reported at once.
func parseListQuery(q url.Values) (listQuery, error) {
	out := listQuery{limit: DefaultLimit}
	var fields []problem.FieldError
	if s := q.Get("state"); s != "" {
		out.filter.State = shipment.State(s)
		if !out.filter.State.Valid() {
			fields = append(fields, problem.FieldError{Field: "state", Detail: "unknown state"})
		}
	}
	if s := q.Get("invoice_id"); s != "" {
		id, err := uuid.Parse(s)
		if err != nil {
			fields = append(fields, problem.FieldError{Field: "invoice_id", Detail: "must be a UUID"})
		}
		out.filter.InvoiceID = id
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			fields = append(fields, problem.FieldError{Field: "limit", Detail: "must be an integer from 1 to " + strconv.Itoa(MaxLimit)})
		}
		out.limit = n
	}
	if s := q.Get("cursor"); s != "" {
		after, ok := cursor.DecodeSeq(s, cursorVersion)
		if !ok {
			fields = append(fields, problem.FieldError{Field: "cursor", Detail: "is not a cursor this API returned"})
		}
		out.filter.After = after
	}
	if len(fields) > 0 {
		return listQuery{}, problem.Invalid("the query is invalid", fields...)
	}
	return out, nil
}

// encodeCursor makes the opaque cursor of the page after the shipment with seq.
func encodeCursor(seq int64) string { return cursor.EncodeSeq(cursorVersion, seq) }

// moveRequest is the body of POST /v1/shipments/{id}/transitions.
type moveRequest struct {
	To      string `json:"to"`
	Version *int64 `json:"version"`
}

type move struct {
	to      shipment.State
	version int64
}

// decodeMove reads a moveRequest: JSON within maxMoveBody bytes, one object whose
// members are its fields named exactly and once each (strict.Decode), to a known
// state, version ≥ 1.
func decodeMove(c echo.Context) (move, error) {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || mt != "application/json" {
		return move{}, problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type", "the body must be application/json")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxMoveBody))
	if err != nil {
		return move{}, problem.New(http.StatusBadRequest, "malformed-request", "the body could not be read")
	}
	var req moveRequest
	if err := strict.Decode(body, &req); err != nil {
		return move{}, problem.New(http.StatusBadRequest, "malformed-request", "the body is not a valid transition request: "+err.Error())
	}
	var fields []problem.FieldError
	to := shipment.State(req.To)
	if !to.Valid() {
		fields = append(fields, problem.FieldError{Field: "to", Detail: "must be a shipment state"})
	}
	if req.Version == nil || *req.Version < 1 {
		fields = append(fields, problem.FieldError{Field: "version", Detail: "must be the shipment's current version (≥ 1)"})
	}
	if len(fields) > 0 {
		return move{}, problem.Invalid("the transition request is invalid", fields...)
	}
	return move{to: to, version: *req.Version}, nil
}
