# handoff — see README.md. `make help` lists the targets.
MODULES := pkg/integrationkit migrations docs/openapi finance logistics e2e

.PHONY: help run reset test chaos demo bench bench-compare bench-short lint build docs clean

help: ## list the targets and the variables they read
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
	@echo "Variables:"
	@sed -n 's/^#: /  /p' $(MAKEFILE_LIST)

#: FINANCE_ADDR    finance's address for make run (default 127.0.0.1:8081)
#: LOGISTICS_ADDR  logistics' address for make run (default 127.0.0.1:8082)
#: PG_ADMIN_URL    the PostgreSQL to use (default: 127.0.0.1:5432 if it answers,
#:                 else a private cluster under .data/ on 127.0.0.1:PG_PORT, 55432)
#: YES=1           make reset does not ask

run: ## start PostgreSQL (found or private) and both services; print URLs, tokens, dashboard sign-in
	@scripts/run.sh

reset: ## drop the finance and logistics databases make run created and delete .data/ (asks first)
	@scripts/reset.sh

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

bench-short: ## a quick benchmark (under 100 s), ending with `e2e/ceiling: 0.NN`
	@url=$$(scripts/pg.sh ensure) && export PG_ADMIN_URL=$$url TEST_DATABASE_URL=$$url && \
		cd e2e && go run ./cmd/bench -short

# golangci-lint runs go vet's analyzers and staticcheck itself, with the house rules of
# .golangci.yml (depguard, funlen); docs/development.md explains them.
GOLANGCI_LINT := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

lint: ## no tracked binaries, gofmt, then golangci-lint (vet, staticcheck, errcheck, depguard, funlen) over every module
	@bins=$$(git ls-files -z 2>/dev/null | LC_ALL=C xargs -0 -r grep -l -a -m1 -P '^\x7fELF' 2>/dev/null || true); \
		test -z "$$bins" || { echo "binaries are tracked; remove them and ignore them in .gitignore:"; echo "$$bins"; exit 1; }
	@test -z "$$(gofmt -l $(MODULES))" || { gofmt -l $(MODULES); exit 1; }
	@for m in $(MODULES); do echo "lint $$m"; (cd $$m && $(GOLANGCI_LINT) run ./...) || exit 1; done
	@for m in e2e/monitoring e2e/riverbaseline; do echo "lint $$m"; (cd $$m && GOWORK=off $(GOLANGCI_LINT) run ./...) || exit 1; done

build: ## build both binaries into bin/
	@mkdir -p bin
	@cd finance && go build -o ../bin/finance ./cmd/finance
	@cd logistics && go build -o ../bin/logistics ./cmd/logistics

docs: ## rewrite README.md's configuration table from the binaries' declarations
	@cd e2e && go test -count=1 -run '^TestReadmeConfigurationTable$$' ./deploy -update

clean: ## remove bin/ and the benchmark's binaries (keeps .data/)
	rm -rf bin e2e/.out/bin
