module handoff/docs/openapi

go 1.26.8
