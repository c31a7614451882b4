#!/usr/bin/env bash
# Creates the role and the database of each handoff service. The postgres image runs
# /docker-entrypoint-initdb.d/ once, on the first start with an empty data directory;
# later starts keep what exists. Each service owns its database and cannot connect to
# the other's: nothing joins across them.
set -euo pipefail
# Each password comes from its variable or, as compose.yaml passes it, from the file
# its *_FILE variable names (a compose secret).
for var in FINANCE_DB_PASSWORD LOGISTICS_DB_PASSWORD; do
  file_var=${var}_FILE
  if [ -z "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    printf -v "$var" '%s' "$(cat "${!file_var}")"
  fi
done
: "${FINANCE_DB_PASSWORD:?must be set (or FINANCE_DB_PASSWORD_FILE)}"
: "${LOGISTICS_DB_PASSWORD:?must be set (or LOGISTICS_DB_PASSWORD_FILE)}"

# Passwords go in as psql variables, quoted by psql (:'name'), never spliced into SQL.
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
  -v finance_password="$FINANCE_DB_PASSWORD" -v logistics_password="$LOGISTICS_DB_PASSWORD" <<'SQL'
CREATE ROLE finance LOGIN PASSWORD :'finance_password';
CREATE DATABASE finance OWNER finance;
REVOKE ALL ON DATABASE finance FROM PUBLIC;

CREATE ROLE logistics LOGIN PASSWORD :'logistics_password';
CREATE DATABASE logistics OWNER logistics;
REVOKE ALL ON DATABASE logistics FROM PUBLIC;
SQL
