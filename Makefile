# handoff — see README.md. `make help` lists the targets.
MODULES := pkg/integrationkit migrations docs/openapi finance logistics e2e

.PHONY: help run test chaos demo bench bench-compare bench-short lint build clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## start PostgreSQL (found or private), both services, print URLs; Ctrl-C stops
	@scripts/run.sh

test: ## every test of every module, race detector on, against real PostgreSQL
	@scripts/test.sh

chaos: ## the full chaos suite: 300 invoices per scenario, 5 runs in a row (minutes)
	@export TEST_DATABASE_URL=$$(scripts/pg.sh ensure) && cd e2e && \
		CHAOS_INVOICES=300 CHAOS_RUNS=5 CHAOS_DURATION=20s go test -count=1 -run TestChaos -v -timeout 80m ./ | grep -v '^\s*{'

demo: ## invoices paid during a logistics outage, then recovery, on its own services
	@export PG_ADMIN_URL=$$(scripts/pg.sh ensure) && cd e2e && go run ./cmd/demo

bench: ## the full benchmark against the pgx ceiling, both delivery modes (many minutes)
	@url=$$(scripts/pg.sh ensure) && export PG_ADMIN_URL=$$url TEST_DATABASE_URL=$$url && \
		cd e2e && go run ./cmd/bench

bench-compare: ## compare two runs' JSON: make bench-compare OLD=a.json NEW=e2e/.out/bench.json
	@test -n "$(OLD)" -a -n "$(NEW)" || { echo "usage: make bench-compare OLD=old.json NEW=new.json"; exit 2; }
	@cd e2e && go run ./cmd/bench -compare "$(abspath $(OLD))" "$(abspath $(NEW))"

bench-short: ## a quick benchmark (about two minutes), ending with `e2e/ceiling: 0.NN`
	@url=$$(scripts/pg.sh ensure) && export PG_ADMIN_URL=$$url TEST_DATABASE_URL=$$url && \
		cd e2e && go run ./cmd/bench -short

lint: ## gofmt, go vet and staticcheck over every module
	@test -z "$$(gofmt -l $(MODULES))" || { gofmt -l $(MODULES); exit 1; }
	@for m in $(MODULES); do (cd $$m && go vet ./... && go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...) || exit 1; done
	@cd e2e/monitoring && GOWORK=off go vet ./... && GOWORK=off go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

build: ## build both binaries into bin/
	@mkdir -p bin
	@cd finance && go build -o ../bin/finance ./cmd/finance
	@cd logistics && go build -o ../bin/logistics ./cmd/logistics

clean: ## remove bin/ (keeps .data/)
	rm -rf bin
