package invoiceapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"handoff/pkg/integrationkit/problem"
	"handoff/pkg/integrationkit/strict"
)

// maxBodyBytes bounds a request body; an invoice of 500 long lines fits easily.
const maxBodyBytes = 1 << 20

// decodeJSON reads the body into dst strictly: a JSON media type, valid UTF-8 without
// NUL, one object whose members are dst's fields named exactly (case included) and
// once each at every depth, nested at most strict.MaxDepth deep, values of the
// declared types (so amounts must be integers, never floats or strings) and nothing
// after it.
func decodeJSON(c echo.Context, dst any) error {
	req := c.Request()
	if !isJSON(req.Header.Get(echo.HeaderContentType)) {
		return problem.New(http.StatusUnsupportedMediaType, "unsupported-media-type",
			"send the body as application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem.Newf(http.StatusRequestEntityTooLarge, "body-too-large", "the body exceeds %d bytes", maxBodyBytes)
		}
		return fmt.Errorf("read body: %w", err)
	}
	switch {
	case !utf8.Valid(body):
		return malformed("the body is not valid UTF-8")
	case bytes.IndexByte(body, 0) >= 0:
		return malformed("the body contains a NUL byte")
	}
	if err := strict.Decode(body, dst); err != nil {
		return decodeProblem(err)
	}
	return nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json"))
}

func malformed(detail string) error {
	return problem.New(http.StatusBadRequest, "malformed-json", detail)
}

// decodeProblem turns a decoding error into the problem that names the field. A
// member that is not a field, even one differing only in case, is a validation
// failure naming it; the other refusals mean the body is not a JSON object at all.
func decodeProblem(err error) error {
	var (
		refused *strict.Error
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &refused) && refused.Reason == strict.Unknown:
		return problem.Invalid(refused.Error(),
			problem.FieldError{Field: refused.Field(), Detail: "is not a field of this request"})
	case errors.As(err, &refused) && refused.Reason == strict.TrailingData:
		return malformed("the body has data after the JSON object")
	case errors.As(err, &refused):
		return malformed(refused.Error())
	case errors.As(err, &syntax):
		return malformed(fmt.Sprintf("the body is not valid JSON (at byte %d)", syntax.Offset))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return malformed("the body is empty or cut short")
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return malformed("the body must be a JSON object")
	case errors.As(err, &typeErr):
		return problem.Invalid("a field has the wrong type",
			problem.FieldError{Field: typeErr.Field, Detail: "must be " + describe(typeErr.Type.Kind().String())})
	}
	return malformed("the body cannot be read as JSON")
}

// describe names a Go kind the way an API client thinks of it.
func describe(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"):
		return "an integer (minor units, no decimals)"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "an array"
	case kind == "struct":
		return "an object"
	}
	return "of another type"
}
