#!/usr/bin/env bash
# `make test`: every module's tests (with the race detector) against a real PostgreSQL,
# found or started by scripts/pg.sh, then a short run of every fuzz target.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
TEST_DATABASE_URL=$(scripts/pg.sh ensure)
export TEST_DATABASE_URL
status=0
# The server may be shared with other suites. Two packages at a time (-p) and two
# tests in each (-parallel), on any number of cores, with pgtest.MaxConns per test's
# pool and DB_MAX_CONNS=4 per e2e service, keep this run under about 30 connections.
for mod in pkg/integrationkit migrations logistics finance e2e; do
  echo "== $mod"
  (cd "$mod" && go test -race -count=1 -p 2 -parallel 2 -timeout 15m ./...) || status=1
done
# e2e/monitoring is a module outside go.work (its Prometheus parsers would raise
# versions in the workspace), so it runs with GOWORK=off. It checks files and scrapes
# the binaries; it has no concurrent code of its own to race.
echo "== e2e/monitoring"
(cd e2e/monitoring && GOWORK=off go test -count=1 -p 2 -parallel 2 -timeout 15m ./...) || status=1
# e2e/riverbaseline, the benchmark's River baseline, is outside go.work for the same
# reason (River's requirements); its tests need no database.
echo "== e2e/riverbaseline"
(cd e2e/riverbaseline && GOWORK=off go test -race -count=1 ./...) || status=1

# fuzz MODULE PACKAGE TARGET EXECS runs one target for a few seconds beyond its
# committed corpus (the unit tests above already replayed that corpus). The budget is a
# count of executions, not a -fuzztime duration: Go 1.26's fuzz coordinator can fail a
# timed run with a spurious "context deadline exceeded" as the time runs out
# (golang/go#75804), and a count has no deadline to race. A failing input is written
# to the package's testdata/fuzz/TARGET/ for committing.
fuzz() {
  echo "== fuzz $3"
  (cd "$1" && go test -run '^$' -fuzz "^$3\$" -fuzztime "$4x" -timeout 2m "$2") || status=1
}
fuzz pkg/integrationkit ./egress FuzzClassify 20000
fuzz pkg/integrationkit ./webhook FuzzVerify 15000
fuzz pkg/integrationkit ./backoff FuzzParseRetryAfter 15000
fuzz pkg/integrationkit ./idempotency FuzzParseKey 15000
fuzz pkg/integrationkit ./strict FuzzDecode 15000
fuzz pkg/integrationkit ./wire FuzzContract 10000
fuzz finance ./internal/invoice FuzzAcceptedInputFitsTheWire 5000
fuzz logistics ./internal/webhookapi FuzzParseEvent 6000
fuzz logistics ./internal/webhookapi FuzzIdempotencyKey 15000
fuzz logistics ./internal/webhookapi FuzzWireValidEventIsAccepted 5000
exit $status
