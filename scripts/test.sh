#!/usr/bin/env bash
# `make test`: every module's tests (with the race detector) against a real PostgreSQL,
# found or started by scripts/pg.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
TEST_DATABASE_URL=$(scripts/pg.sh ensure)
export TEST_DATABASE_URL
status=0
for mod in pkg/integrationkit migrations logistics finance e2e; do
  echo "== $mod"
  (cd "$mod" && go test -race -count=1 -timeout 15m ./...) || status=1
done
exit $status
