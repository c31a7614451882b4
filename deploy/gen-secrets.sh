#!/usr/bin/env bash
# Writes the secrets compose.yaml mounts, one file each, with fresh random values:
#   deploy/gen-secrets.sh            # into .secrets/ at the repository root
#   deploy/gen-secrets.sh DIR        # into DIR
# A file that exists is kept: the database passwords must keep matching the roles the
# PostgreSQL volume was initialised with. Delete a file and run this again to make a
# new one (docs/operations.md says how to rotate). .secrets/ is git-ignored and kept
# out of image builds. It suits one machine's trial; a production deployment mounts
# the same files from its secret store.
#
# The directory is the operator's alone (0700); the files in it are 0644 because
# compose bind-mounts them with their host permissions, and the containers' users
# (distroless nonroot, the image's postgres) must read them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.secrets}
mkdir -p "$dir"
chmod 700 "$dir"

hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

# put NAME VALUE writes VALUE to DIR/NAME unless the file exists.
put() {
  if [ -e "$dir/$1" ]; then
    echo "kept    $dir/$1" >&2
    return
  fi
  (umask 022 && printf '%s\n' "$2" >"$dir/$1")
  chmod 644 "$dir/$1"
  echo "created $dir/$1" >&2
}

put postgres_password "$(hex 24)"
put finance_db_password "$(hex 24)"
put logistics_db_password "$(hex 24)"
# Each service's DATABASE_URL carries its role's password, as the files above hold it.
for svc in finance logistics; do
  put "${svc}_database_url" \
    "postgres://$svc:$(cat "$dir/${svc}_db_password")@postgres:5432/$svc?sslmode=disable"
done
put logistics_ops_token "ops-$(hex 16)"
# API_TOKENS holds the ops token finance's reconciliation presents to logistics.
put api_tokens "clerk:clerk-$(hex 16),ops:$(cat "$dir/logistics_ops_token"),warehouse:warehouse-$(hex 16)"
put webhook_secret "whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
# Empty: no Slack bot. Write the token here to page through the Web API instead of
# SLACK_WEBHOOK_URL (and set SLACK_CHANNEL).
put slack_token ""
