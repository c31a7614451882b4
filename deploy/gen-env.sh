#!/usr/bin/env bash
# Prints a .env with fresh random secrets for compose.yaml, which refuses to start
# without them:
#   (umask 077 && deploy/gen-env.sh > .env)
# .env is git-ignored and kept out of image builds. It suits one machine's trial; a
# production deployment takes the same variables from its secret store.
set -euo pipefail

hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
ops_token=ops-$(hex 16)

cat <<ENV
# Secrets of compose.yaml, made by deploy/gen-env.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ). Keep private.
POSTGRES_PASSWORD=$(hex 24)
FINANCE_DB_PASSWORD=$(hex 24)
LOGISTICS_DB_PASSWORD=$(hex 24)
API_TOKENS=clerk:clerk-$(hex 16),ops:$ops_token,warehouse:warehouse-$(hex 16)
LOGISTICS_OPS_TOKEN=$ops_token
WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')
# Paging to the local stand-in (docker compose --profile slack up):
# SLACK_WEBHOOK_URL=http://slack:8080/services/standin
ENV
