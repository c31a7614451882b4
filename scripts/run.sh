#!/usr/bin/env bash
# `make run`: find or start PostgreSQL, create both databases, build and start both
# services with development secrets, print the URLs; Ctrl-C stops everything.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p .data bin

admin=$(scripts/pg.sh ensure)
db_url() { # name
  local base=${admin%%\?*}
  echo "${base%/*}/$1?sslmode=disable"
}
for db in finance logistics; do
  if [ -z "$(psql "$admin" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
    psql "$admin" -qc "CREATE DATABASE $db" && echo "created database $db"
  fi
done

# Development secrets, made once and kept in .data/ (never committed).
if [ ! -f .data/dev.env ]; then
  rnd() { head -c "$1" /dev/urandom | base64 | tr -d '/+=\n' | head -c "$2"; }
  {
    echo "API_TOKENS=clerk:clerk-$(rnd 24 24),ops:ops-$(rnd 24 24),warehouse:warehouse-$(rnd 24 24)"
    echo "WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
  } > .data/dev.env
  chmod 600 .data/dev.env
fi
set -a; . .data/dev.env; set +a
# LOGISTICS_ADDR is this script's own: finance refuses an unknown LOGISTICS_* variable.
export -n LOGISTICS_ADDR

echo "building binaries"
(cd finance && go build -o ../bin/finance ./cmd/finance)
(cd logistics && go build -o ../bin/logistics ./cmd/logistics)

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  scripts/pg.sh stop
}
trap stop INT TERM EXIT

DATABASE_URL=$(db_url logistics) HTTP_ADDR=${LOGISTICS_ADDR:-127.0.0.1:8082} \
  bin/logistics serve 2>>.data/logistics.log & pids+=($!)
DATABASE_URL=$(db_url finance) HTTP_ADDR=${FINANCE_ADDR:-127.0.0.1:8081} \
  LOGISTICS_WEBHOOK_URL=http://${LOGISTICS_ADDR:-127.0.0.1:8082}/webhooks/finance \
  OUTBOUND_ALLOW=${OUTBOUND_ALLOW:-127.0.0.1/32} \
  LOGISTICS_OPS_TOKEN=$(echo "$API_TOKENS" | tr ',' '\n' | sed -n 's/^ops://p') \
  bin/finance serve 2>>.data/finance.log & pids+=($!)

token() { echo "$API_TOKENS" | tr ',' '\n' | sed -n "s/^$1://p"; }

for url in "http://${FINANCE_ADDR:-127.0.0.1:8081}/readyz" "http://${LOGISTICS_ADDR:-127.0.0.1:8082}/readyz"; do
  for _ in $(seq 1 100); do
    curl -fsS "$url" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "$url" >/dev/null || { echo "not ready: $url (see .data/*.log)"; exit 1; }
done

cat <<TXT

handoff is running (logs in .data/finance.log and .data/logistics.log)
  finance    http://${FINANCE_ADDR:-127.0.0.1:8081}   invoice API /v1/invoices
  logistics  http://${LOGISTICS_ADDR:-127.0.0.1:8082}   warehouse API /v1/shipments
  tokens     $(echo "$API_TOKENS" | tr ',' ' ')
Try:
  curl -s -X POST http://${FINANCE_ADDR:-127.0.0.1:8081}/v1/invoices \\
    -H "Authorization: Bearer $(token clerk)" -H 'Content-Type: application/json' \\
    -d '{"customer_id":"cust-42","currency":"EUR","lines":[{"description":"Pallet","quantity":2,"unit_price_minor":6000}]}'
Press Ctrl-C to stop.
TXT
wait -n "${pids[@]}"
