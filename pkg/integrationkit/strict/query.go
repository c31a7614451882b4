package strict

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
)

// CheckQuery returns nil when rawQuery (a URL's query string, without "?") parses and
// names only parameters in allowed, compared exactly, case included. Otherwise it
// returns a 400 problem: type malformed-query for a query string net/url cannot parse
// (a bad escape, a semicolon), whose pairs a router would drop silently, or type
// unknown-parameter naming the unknown parameter that sorts first.
func CheckQuery(rawQuery string, allowed ...string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return problem.New(http.StatusBadRequest, "malformed-query", "the query string is malformed: "+err.Error())
	}
	var unknown []string
	for name := range q {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return problem.Newf(http.StatusBadRequest, "unknown-parameter", "unknown query parameter %q", slices.Min(unknown))
	}
	return nil
}

// Query is CheckQuery as route middleware: a request whose query string it refuses
// gets that problem and never reaches the handler. Register it after the route's
// authentication, so a caller without a token learns nothing of the route.
func Query(allowed ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := CheckQuery(c.Request().URL.RawQuery, allowed...); err != nil {
				return err
			}
			return next(c)
		}
	}
}
