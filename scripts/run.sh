#!/usr/bin/env bash
# `make run`: find or start PostgreSQL, create both databases, build and start both
# services with development secrets, print the URLs, the tokens and how to sign in to
# the dashboard. Ctrl-C stops everything and exits 0.
#
#   FINANCE_ADDR    finance's listen address (default 127.0.0.1:8081)
#   LOGISTICS_ADDR  logistics' listen address (default 127.0.0.1:8082)
#   DATA_DIR        tokens, logs and a private cluster (default .data in the clone)
#   PG_ADMIN_URL, PG_PORT  which PostgreSQL (scripts/pg.sh)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/ports.sh

# On a terminal, run in a foreground process group of our own: Ctrl-C then reaches
# only this script and what it started, not make, which would otherwise die by the
# signal after the script ended and report "Error 130".
if [ -z "${HANDOFF_RUN_CHILD:-}" ] && [ -t 0 ] && command -v ps >/dev/null &&
  [ "$(ps -o tpgid= -p $$ | tr -d ' ')" = "$(ps -o pgid= -p $$ | tr -d ' ')" ]; then
  set -m
  status=0
  HANDOFF_RUN_CHILD=1 "$root/scripts/run.sh" "$@" || status=$?
  exit "$status"
fi
# Not for the services: finance refuses an unknown LOGISTICS_* variable.
export -n HANDOFF_RUN_CHILD LOGISTICS_ADDR

finance_addr=${FINANCE_ADDR:-127.0.0.1:8081}
logistics_addr=${LOGISTICS_ADDR:-127.0.0.1:8082}
finance_url=$(url_of "$finance_addr")
logistics_url=$(url_of "$logistics_addr")
# A taken port fails now, before anything is built or started.
require_free run FINANCE_ADDR "$finance_addr"
require_free run LOGISTICS_ADDR "$logistics_addr"

mkdir -p "${DATA_DIR:-.data}" bin
data=$(cd "${DATA_DIR:-.data}" && pwd)
pg_was_running=$(DATA_DIR=$data scripts/pg.sh running && echo yes || true)
admin=$(DATA_DIR=$data scripts/pg.sh ensure)

pids=()
# stop ends the services and, when this run started it, the private cluster.
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$pg_was_running" ] || DATA_DIR=$data scripts/pg.sh stop || true
}
trap 'status=$?; stop; exit $status' EXIT
trap 'echo; echo "stopping"; stop; exit 0' INT TERM

db_url() { # name
  local base=${admin%%\?*}
  echo "${base%/*}/$1?sslmode=disable"
}
# The databases this clone's make run created are listed in $data/created-databases
# (one "<server> <name>" per line): make reset drops those, and no other.
for db in finance logistics; do
  if [ -z "$(psql "$admin" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
    psql "$admin" -qc "CREATE DATABASE $db" && echo "created database $db" &&
      echo "${admin%%\?*} $db" >> "$data/created-databases"
  fi
done

# Development secrets, made once and kept in $data (never committed).
if [ ! -f "$data/dev.env" ]; then
  rnd() { head -c "$1" /dev/urandom | base64 | tr -d '/+=\n' | head -c "$2"; }
  {
    echo "API_TOKENS=clerk:clerk-$(rnd 24 24),ops:ops-$(rnd 24 24),warehouse:warehouse-$(rnd 24 24)"
    echo "WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
  } >"$data/dev.env"
  chmod 600 "$data/dev.env"
fi
set -a
. "$data/dev.env"
set +a
token() { echo "$API_TOKENS" | tr ',' '\n' | sed -n "s/^$1://p"; }

echo "building binaries"
(cd finance && go build -o ../bin/finance ./cmd/finance)
(cd logistics && go build -o ../bin/logistics ./cmd/logistics)

# size FILE prints FILE's length in bytes (0 when absent): where this run's lines of
# an appended log begin.
size() { if [ -f "$1" ]; then wc -c <"$1" | tr -d ' '; else echo 0; fi; }
# log_tail NAME prints the last lines NAME's service wrote in this run.
log_tail() {
  local log=$data/$1.log off
  off=${offset[$1]}
  echo "run: the last lines of $log:" >&2
  tail -c +$((off + 1)) "$log" | tail -n 15 | sed 's/^/  /' >&2
}
declare -A offset pid
offset[logistics]=$(size "$data/logistics.log")
offset[finance]=$(size "$data/finance.log")

DATABASE_URL=$(db_url logistics) HTTP_ADDR=$logistics_addr \
  bin/logistics serve 2>>"$data/logistics.log" &
pid[logistics]=$!
pids+=($!)
DATABASE_URL=$(db_url finance) HTTP_ADDR=$finance_addr \
  LOGISTICS_WEBHOOK_URL=$logistics_url/webhooks/finance \
  OUTBOUND_ALLOW=${OUTBOUND_ALLOW:-127.0.0.1/32} LOGISTICS_OPS_TOKEN=$(token ops) \
  bin/finance serve 2>>"$data/finance.log" &
pid[finance]=$!
pids+=($!)

# died NAME reports that NAME's service exited, with its status and its last lines.
died() {
  local status=0
  wait "${pid[$1]}" || status=$?
  echo "run: $1 exited with status $status" >&2
  log_tail "$1"
  exit 1
}

# await NAME URL waits until URL answers, for at most 60 s; NAME's service exiting
# first, or never answering, fails with its last lines.
await() {
  local deadline=$((SECONDS + 60))
  until curl -fsS --max-time 2 -o /dev/null "$2" 2>/dev/null; do
    kill -0 "${pid[$1]}" 2>/dev/null || died "$1"
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "run: $1 did not answer $2 within 60 s" >&2
      log_tail "$1"
      exit 1
    fi
    sleep 0.2
  done
}
shown=${data#"$root"/} # as the reader may type it
await logistics "$logistics_url/readyz"
await finance "$finance_url/readyz"

# For trying the APIs by hand: `. .data/tokens.sh` (README, "The first ten minutes").
cat >"$data/tokens.sh" <<SH
# Written by make run: the services' URLs and a token of each role, for curl.
finance_url=$finance_url
logistics_url=$logistics_url
clerk_token=$(token clerk)
ops_token=$(token ops)
warehouse_token=$(token warehouse)
SH
chmod 600 "$data/tokens.sh"

cat <<TXT

handoff is running. Logs: $shown/finance.log, $shown/logistics.log

  finance    $finance_url     invoice API /v1/invoices (clerk token)
  logistics  $logistics_url     warehouse API /v1/shipments (warehouse token)
  dashboard  $finance_url/ops/
             sign in with the ops token: $(token ops)

  tokens     clerk      $(token clerk)
             ops        $(token ops)
             warehouse  $(token warehouse)
             (in $shown/dev.env; $shown/tokens.sh sets \$finance_url, \$clerk_token, … for curl)

Try it, as in README.md "The first ten minutes":
  . $shown/tokens.sh
  curl -s -X POST "\$finance_url/v1/invoices" -H "Authorization: Bearer \$clerk_token" \\
    -H 'Content-Type: application/json' \\
    -d '{"customer_id":"cust-42","currency":"EUR","lines":[{"description":"Pallet","quantity":2,"unit_price_minor":6000}]}'

Press Ctrl-C to stop.
TXT

# Wait for either service to exit; Ctrl-C ends the wait through the INT trap.
status=0
wait -n "${pids[@]}" || status=$?
for name in finance logistics; do
  kill -0 "${pid[$name]}" 2>/dev/null || died "$name"
done
exit "$status"
