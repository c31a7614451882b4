module handoff/migrations

go 1.26.8
