#!/usr/bin/env bash
# `make reset`: drops the databases this clone's `make run` created (finance and
# logistics, as listed in .data/created-databases: a database of that name that
# existed before make run is left alone) and deletes .data/ (development tokens, logs,
# the private cluster), after asking. YES=1 answers yes. No other database is touched.
# DATA_DIR moves .data, as for scripts/run.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
data=${DATA_DIR:-$root/.data}
# A DATA_DIR pointing elsewhere is deleted only when make run made it.
if [ "$data" != "$root/.data" ] && [ -e "$data" ] && [ ! -f "$data/dev.env" ]; then
  echo "reset: $data holds no dev.env, so make run did not make it; not deleting it" >&2
  exit 1
fi
system_url="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

# The server make run uses, when it is not the private cluster (which goes as a whole):
# PG_ADMIN_URL, or the one on 127.0.0.1:5432 if it answers.
admin=${PG_ADMIN_URL:-}
if [ -z "$admin" ] && command -v psql >/dev/null && psql "$system_url" -Atqc 'select 1' >/dev/null 2>&1; then
  admin=$system_url
fi

# The databases make run created on that server, and no others.
created=()
if [ -n "$admin" ] && [ -f "$data/created-databases" ]; then
  while read -r server db; do
    if [ "$server" = "${admin%%\?*}" ] && [[ $db =~ ^(finance|logistics)$ ]]; then created+=("$db"); fi
  done < "$data/created-databases"
fi

echo "make reset will"
if [ ${#created[@]} -gt 0 ]; then
  echo "  - drop the databases ${created[*]} on ${admin%%\?*} (make run created them)"
elif [ -n "$admin" ]; then
  echo "  - drop no database on ${admin%%\?*}: make run created none there (finance and logistics, if present, stay)"
fi
echo "  - stop and delete the private PostgreSQL cluster, if there is one"
echo "  - delete $data (development tokens, logs)"
if [ "${YES:-}" != 1 ]; then
  if ! read -r -p "Continue? [y/N] " answer; then
    echo
    echo "no answer: nothing changed (YES=1 make reset does not ask)" >&2
    exit 1
  fi
  case $answer in
    y | Y | yes | YES) ;;
    *)
      echo "nothing changed"
      exit 0
      ;;
  esac
fi

if [ ${#created[@]} -gt 0 ]; then
  for db in "${created[@]}"; do
    if [ -z "$(psql "$admin" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
      echo "no database $db"
      continue
    fi
    # Without FORCE: a database still in use (make run is up) is refused, not cut off.
    if ! psql "$admin" -v ON_ERROR_STOP=1 -qc "DROP DATABASE $db"; then
      echo "reset: could not drop $db; stop make run (or whatever is connected to it) and try again" >&2
      exit 1
    fi
    echo "dropped database $db"
  done
fi
DATA_DIR=$data scripts/pg.sh destroy
rm -rf "$data"
echo "deleted $data"
