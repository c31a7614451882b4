package apidoc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"go.yaml.in/yaml/v3"
)

// methods are the operation keys of an OpenAPI path item; its other keys (summary,
// parameters, …) are not operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Compare holds routes, an echo server's e.Routes(), against doc, an OpenAPI document
// in YAML. It returns each route the document has no operation for and each operation
// no route serves, as "METHOD /path" with path parameters written {name}, sorted. The
// catch-all routes echo adds for group middleware answer 404 and are left out.
func Compare(routes []*echo.Route, doc []byte) (undocumented, unrouted []string, err error) {
	var d struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, nil, fmt.Errorf("apidoc: the document is not YAML: %w", err)
	}
	documented := map[string]bool{}
	for path, item := range d.Paths {
		for key := range item {
			if slices.Contains(methods, key) {
				documented[strings.ToUpper(key)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue
		}
		op := r.Method + " " + templated(r.Path)
		if !served[op] && !documented[op] {
			undocumented = append(undocumented, op)
		}
		served[op] = true
	}
	for op := range documented {
		if !served[op] {
			unrouted = append(unrouted, op)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unrouted)
	return undocumented, unrouted, nil
}

// templated writes echo's path parameters (:id) as OpenAPI's ({id}).
func templated(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}
