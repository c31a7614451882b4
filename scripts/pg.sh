#!/usr/bin/env bash
# Finds or starts the PostgreSQL that `make run` and `make test` use, and prints its
# admin URL on stdout. Order: $PG_ADMIN_URL if set; a server on 127.0.0.1:5432 that
# lets user postgres in; else a private cluster under .data/pg (port $PG_PORT, default
# 55432), created with the system's initdb (the postgresql package is installed when
# root and absent).
#   scripts/pg.sh ensure    print the URL, starting the private cluster if needed
#   scripts/pg.sh running   succeed when the private cluster runs
#   scripts/pg.sh stop      stop the private cluster if it runs
#   scripts/pg.sh destroy   stop the private cluster and delete its directory
# DATA_DIR moves .data (default: .data in the clone).
#
# The cluster runs as the postgres user when root runs this (postgres refuses to run
# as root), so that user must reach its directory: a clone under /root, which only
# root may enter, keeps its cluster in the postgres user's home instead
# (/var/lib/postgresql/handoff-<hash of the clone's .data>).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/ports.sh"
data_root=${DATA_DIR:-$root/.data}
port=${PG_PORT:-55432}
system_url="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
private_url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"

log() { echo "pg: $*" >&2; }

answers() { # url
  command -v psql >/dev/null 2>&1 && psql "$1" -Atqc 'select 1' >/dev/null 2>&1
}

pg_bin() { # name
  if command -v "$1" >/dev/null 2>&1; then
    command -v "$1"
    return
  fi
  ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1
}

# as_owner runs a command as the cluster's owner: postgres when root runs this. From
# /, since the caller's directory may be one postgres cannot enter.
as_owner() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# cluster_dir prints the private cluster's directory: $data_root/pg, unless root runs
# this and the postgres user cannot reach $data_root.
cluster_dir() {
  if [ "$(id -u)" != 0 ] || as_owner test -x "$data_root" 2>/dev/null; then
    echo "$data_root/pg"
    return
  fi
  local home
  home=$(getent passwd postgres | cut -d: -f6)
  echo "${home:-/var/lib/postgresql}/handoff-$(printf %s "$data_root" | sha256sum | cut -c1-12)"
}

install_postgres() {
  if [ -n "$(pg_bin initdb)" ] && command -v psql >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" != 0 ]; then
    log "no PostgreSQL found: install the postgresql package (or set PG_ADMIN_URL)"
    exit 1
  fi
  log "installing the postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
}

running() { # dir
  [ -f "$1/postmaster.pid" ] && as_owner "$(pg_bin pg_ctl)" -D "$1" status >/dev/null 2>&1
}

start_private() {
  install_postgres
  mkdir -p "$data_root"
  local dir initdb pg_ctl
  dir=$(cluster_dir)
  initdb=$(pg_bin initdb)
  pg_ctl=$(pg_bin pg_ctl)
  if running "$dir"; then return; fi
  if in_use "127.0.0.1:$port"; then
    log "127.0.0.1:$port is already in use (by $(holder "$port")); set PG_PORT to a free port," \
      "e.g. PG_PORT=$(free_near "127.0.0.1:$port" | cut -d: -f2), or PG_ADMIN_URL to a server to use"
    exit 1
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
  chmod 700 "$dir"
  if [ ! -f "$dir/PG_VERSION" ]; then
    log "creating a private cluster in $dir"
    as_owner "$initdb" -D "$dir" -U postgres -A trust -E UTF8 >/dev/null
  fi
  log "starting the private cluster on 127.0.0.1:$port"
  # No Unix socket: clients use TCP, and a socket path inside a deep clone would
  # exceed the 107 bytes a socket path may have.
  as_owner "$pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=''" start >/dev/null ||
    {
      log "the private cluster did not start; the end of $dir/server.log:"
      tail -n 15 "$dir/server.log" >&2 || true
      exit 1
    }
}

stop_private() { # dir
  if running "$1"; then
    as_owner "$(pg_bin pg_ctl)" -D "$1" -m fast -w stop >/dev/null && log "private cluster stopped"
  fi
}

case "${1:-ensure}" in
  ensure)
    if [ -n "${PG_ADMIN_URL:-}" ]; then
      echo "$PG_ADMIN_URL"
      exit 0
    fi
    install_postgres
    if answers "$system_url"; then
      echo "$system_url"
      exit 0
    fi
    start_private
    answers "$private_url" || {
      log "the private cluster does not answer; see $(cluster_dir)/server.log"
      exit 1
    }
    echo "$private_url"
    ;;
  running) running "$(cluster_dir)" ;;
  stop) stop_private "$(cluster_dir)" ;;
  destroy)
    dir=$(cluster_dir)
    stop_private "$dir"
    if [ -d "$dir" ]; then
      rm -rf "$dir"
      log "deleted the private cluster in $dir"
    fi
    ;;
  *)
    echo "usage: scripts/pg.sh ensure|running|stop|destroy" >&2
    exit 2
    ;;
esac
