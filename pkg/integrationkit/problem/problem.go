// Package problem carries RFC 9457 problem details through echo: handlers return a
// *Problem as their error and one error handler writes every error as
// application/problem+json with a stable type.
package problem

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// TypeBase prefixes every problem type; the slug after it is the stable contract.
const TypeBase = "https://handoff.dev/problems/"

// ContentType is the media type of problem bodies.
const ContentType = "application/problem+json"

// Problem is an RFC 9457 problem detail. It is an error so handlers can return it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Errors lists per-field validation failures.
	Errors []FieldError `json:"errors,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header (whole seconds).
	RetryAfter time.Duration `json:"-"`
}

// FieldError names one invalid field of a request.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// New returns a problem of the given status; slug is the stable part of its type.
func New(status int, slug, detail string) *Problem {
	return &Problem{Type: TypeBase + slug, Title: http.StatusText(status), Status: status, Detail: detail}
}

// Newf is New with a formatted detail.
func Newf(status int, slug, format string, args ...any) *Problem {
	return New(status, slug, fmt.Sprintf(format, args...))
}

// Invalid returns a 400 validation problem listing the invalid fields.
func Invalid(detail string, fields ...FieldError) *Problem {
	p := New(http.StatusBadRequest, "validation-failed", detail)
	p.Errors = fields
	return p
}

// InvalidFields is Invalid for a domain's own field errors: any type whose underlying
// type is struct{ Field, Detail string } (those two fields, in that order, without
// tags), so that a domain package reports its invalid fields without importing this one.
func InvalidFields[F ~struct{ Field, Detail string }](detail string, fields []F) *Problem {
	out := make([]FieldError, len(fields))
	for i, f := range fields {
		out[i] = FieldError(f)
	}
	return Invalid(detail, out...)
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%d %s: %s", p.Status, p.Type, p.Detail)
}

// Handler returns the echo error handler that writes every error as problem+json.
// Unknown errors become a 500 whose cause is logged, never sent.
func Handler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := From(err)
		if p.Status >= 500 {
			log.ErrorContext(c.Request().Context(), "request failed",
				"err", err, "method", c.Request().Method, "path", c.Path())
		}
		if p.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
		}
		if err := Write(c, p); err != nil {
			log.WarnContext(c.Request().Context(), "write problem", "err", err)
		}
	}
}

// Write sends p as the response.
func Write(c echo.Context, p *Problem) error {
	c.Response().Header().Set(echo.HeaderContentType, ContentType)
	if c.Request().Method == http.MethodHead {
		return c.NoContent(p.Status)
	}
	return c.JSON(p.Status, p)
}

// From converts any error into the problem to send.
func From(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		detail := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok {
			detail = m
		}
		return New(he.Code, slugFor(he.Code), detail)
	}
	return New(http.StatusInternalServerError, "internal", "the server could not complete the request")
}

func slugFor(status int) string {
	switch status {
	case http.StatusNotFound:
		return "not-found"
	case http.StatusMethodNotAllowed:
		return "method-not-allowed"
	case http.StatusRequestEntityTooLarge:
		return "body-too-large"
	case http.StatusUnsupportedMediaType:
		return "unsupported-media-type"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusBadRequest:
		return "bad-request"
	case http.StatusTooManyRequests:
		return "rate-limited"
	case http.StatusServiceUnavailable:
		return "unavailable"
	default:
		return "http-" + strconv.Itoa(status)
	}
}

// Rule is one row of a Table: the error a handler may return and the answer it gets.
type Rule struct {
	// Err is matched with errors.Is.
	Err    error
	Status int
	// Slug is the stable part of the problem type; pages that show Detail to a person
	// leave it empty.
	Slug   string
	Detail string
}

// When returns the rule answering err with status, slug and detail.
func When(err error, status int, slug, detail string) Rule {
	return Rule{Err: err, Status: status, Slug: slug, Detail: detail}
}

// Table maps the errors handlers return to their answers, in one place per API. The
// first rule whose Err the error is wins.
type Table []Rule

// Match returns the first rule whose Err err is.
func (t Table) Match(err error) (Rule, bool) {
	for _, r := range t {
		if errors.Is(err, r.Err) {
			return r, true
		}
	}
	return Rule{}, false
}

// Map returns the problem of the rule err matches, or err itself when no rule does
// (nil stays nil); the error handler turns an unmatched error into a logged 500.
func (t Table) Map(err error) error {
	if err == nil {
		return nil
	}
	if r, ok := t.Match(err); ok {
		return New(r.Status, r.Slug, r.Detail)
	}
	return err
}

// MapWith returns the middleware that passes every error its handler returns through
// mapErr (a nil error is not passed): an API's one place that turns the errors of its
// domain into problems, mapErr usually ending in a Table's Map.
func MapWith(mapErr func(error) error) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := next(c); err != nil {
				return mapErr(err)
			}
			return nil
		}
	}
}
