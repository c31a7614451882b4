// Package apidoc serves a service's OpenAPI document and holds it against the service's
// routes. The document is written in YAML and embedded in the binary; Register turns it
// into JSON once, at start, and serves it at GET /openapi.json. Compare lists the routes
// the document lacks and the operations no route serves, for a test that keeps the two
// equal.
package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.yaml.in/yaml/v3"
)

// Path is where Register serves the document.
const Path = "/openapi.json"

// Register converts doc, an OpenAPI document in YAML, to JSON and serves it on GET Path
// of e. A document that does not convert is an error, so it stops the binary at start.
func Register(e *echo.Echo, doc []byte) error {
	body, err := JSON(doc)
	if err != nil {
		return err
	}
	e.GET(Path, func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
	})
	return nil
}

// JSON converts a YAML document to compact JSON, anchors and aliases resolved. Mapping
// keys become strings (a status code written 200 is the member "200") and timestamps
// RFC 3339 strings, so every YAML document of plain data has a JSON form.
func JSON(doc []byte) ([]byte, error) {
	var tree any
	if err := yaml.Unmarshal(doc, &tree); err != nil {
		return nil, fmt.Errorf("apidoc: the document is not YAML: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(stringKeys(tree)); err != nil {
		return nil, fmt.Errorf("apidoc: the document has no JSON form: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// stringKeys returns v with every mapping keyed by strings, as JSON objects are.
func stringKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = stringKeys(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = stringKeys(e)
		}
		return v
	}
	return v
}
