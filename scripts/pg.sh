#!/usr/bin/env bash
# Finds or starts the PostgreSQL that `make run` and `make test` use, and prints its
# admin URL on stdout. Order: $PG_ADMIN_URL if set; a server on 127.0.0.1:5432 that
# lets user postgres in; else a private cluster under .data/pg (port 55432), created
# with the system's initdb (the postgresql package is installed when root and absent).
#   scripts/pg.sh ensure   print the URL, starting the private cluster if needed
#   scripts/pg.sh stop     stop the private cluster if it runs
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data="$root/.data/pg"
port=55432
system_url="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
private_url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"

log() { echo "pg: $*" >&2; }

answers() { # url
  command -v psql >/dev/null 2>&1 && psql "$1" -Atqc 'select 1' >/dev/null 2>&1
}

pg_bin() { # name
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1
}

as_owner() { # run a command as the cluster's owner (initdb refuses root)
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_postgres() {
  if [ -n "$(pg_bin initdb)" ] && command -v psql >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" != 0 ]; then
    log "no PostgreSQL found: install the postgresql package (or set PG_ADMIN_URL)"; exit 1
  fi
  log "installing the postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
}

start_private() {
  install_postgres
  local initdb pg_ctl
  initdb=$(pg_bin initdb); pg_ctl=$(pg_bin pg_ctl)
  mkdir -p "$data"
  if [ "$(id -u)" = 0 ]; then chown postgres "$data"; chmod 700 "$data"; fi
  if [ ! -f "$data/PG_VERSION" ]; then
    log "creating a private cluster in $data"
    as_owner "$initdb" -D "$data" -U postgres -A trust -E UTF8 >/dev/null
  fi
  if ! as_owner "$pg_ctl" -D "$data" status >/dev/null 2>&1; then
    log "starting the private cluster on 127.0.0.1:$port"
    as_owner "$pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k $data -c listen_addresses=127.0.0.1" start >/dev/null
  fi
}

case "${1:-ensure}" in
  ensure)
    if [ -n "${PG_ADMIN_URL:-}" ]; then echo "$PG_ADMIN_URL"; exit 0; fi
    install_postgres
    if answers "$system_url"; then echo "$system_url"; exit 0; fi
    start_private
    answers "$private_url" || { log "the private cluster does not answer; see $data/server.log"; exit 1; }
    echo "$private_url"
    ;;
  stop)
    if [ -f "$data/postmaster.pid" ]; then
      as_owner "$(pg_bin pg_ctl)" -D "$data" -m fast -w stop >/dev/null && log "private cluster stopped"
    fi
    ;;
  *) echo "usage: scripts/pg.sh ensure|stop" >&2; exit 2 ;;
esac
