// Package openapi embeds the OpenAPI documents of the handoff services, so each binary
// serves the document of the routes it registers and the tests compare the two.
package openapi

import _ "embed"

//go:embed finance.yaml
var finance string

//go:embed logistics.yaml
var logistics string

// Finance is the OpenAPI document of finance, in YAML.
func Finance() []byte { return []byte(finance) }

// Logistics is the OpenAPI document of logistics, in YAML.
func Logistics() []byte { return []byte(logistics) }
