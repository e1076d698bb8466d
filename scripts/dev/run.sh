#!/usr/bin/env bash
# Starts tock on this machine: makes sure Postgres and Redis answer (starting
# the locally installed ones if they do not), then runs the dashboard, one
# scheduler and one worker until Ctrl-C. Logs go to .run/logs/.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/dev/services.sh

ensure_postgres
ensure_redis

export TOCK_DATABASE_URL="${TOCK_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/tock?sslmode=disable}"
export TOCK_REDIS_URL="${TOCK_REDIS_URL:-redis://127.0.0.1:6379/0}"
export TOCK_HTTP_ADDR="${TOCK_HTTP_ADDR:-127.0.0.1:8080}"
# Local targets (a webhook receiver on this machine) must be reachable here.
export TOCK_ALLOW_PRIVATE_TARGETS="${TOCK_ALLOW_PRIVATE_TARGETS:-true}"

if [[ "$TOCK_DATABASE_URL" == *"/tock?"* ]]; then
  psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'tock'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE tock"
fi

mkdir -p .run/logs
if [ -z "${TOCK_ADMIN_TOKEN:-}" ]; then
  [ -s .run/admin-token ] || head -c 24 /dev/urandom | base64 | tr -d '/+=' > .run/admin-token
  TOCK_ADMIN_TOKEN=$(cat .run/admin-token)
  export TOCK_ADMIN_TOKEN
fi

# The operator key that seals users' webhook signing secrets at rest. It
# belongs with the database, which every checkout on this machine shares, so
# it is kept per machine, not per checkout: a second clone must open what
# the first one sealed.
if [ -z "${TOCK_SECRET_KEY:-}${TOCK_SECRET_KEY_FILE:-}" ]; then
  keydir="${XDG_STATE_HOME:-$HOME/.local/state}/tock"
  mkdir -p "$keydir" && chmod 700 "$keydir"
  [ -s "$keydir/dev-secret-key" ] || { (umask 077; head -c 32 /dev/urandom | base64 > "$keydir/dev-secret-key"); }
  TOCK_SECRET_KEY_FILE="$keydir/dev-secret-key"
  export TOCK_SECRET_KEY_FILE
fi

# Refuse to start beside another tock (or anything else) on these ports: the
# readiness checks below would be answered by it, and its admin token is not
# this one.
for addr in "$TOCK_HTTP_ADDR" 127.0.0.1:9090 127.0.0.1:9091 127.0.0.1:9092; do
  if (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then
    echo "make run: $addr is already in use: is another tock still running? Stop it first (the dashboard's address can move with TOCK_HTTP_ADDR)" >&2
    exit 1
  fi
done

pids=()
stopped=0
# stop ends the services once, however the script ends: Ctrl-C or TERM is
# a normal stop (exit 0); a service that died is not (exit 1).
stop() {
  [ "$stopped" = 1 ] && return
  stopped=1
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "tock stopped."
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

TOCK_METRICS_ADDR=127.0.0.1:9090 ./bin/dashboard > .run/logs/dashboard.log 2>&1 & pids+=($!)
wait_ready "http://$TOCK_HTTP_ADDR/readyz" dashboard .run/logs/dashboard.log
TOCK_METRICS_ADDR=127.0.0.1:9091 ./bin/scheduler > .run/logs/scheduler.log 2>&1 & pids+=($!)
TOCK_METRICS_ADDR=127.0.0.1:9092 ./bin/worker > .run/logs/worker.log 2>&1 & pids+=($!)
wait_ready http://127.0.0.1:9091/readyz scheduler .run/logs/scheduler.log
wait_ready http://127.0.0.1:9092/readyz worker .run/logs/worker.log

cat <<MSG

tock is running.
  dashboard:   http://$TOCK_HTTP_ADDR/
  API:         http://$TOCK_HTTP_ADDR/api/v1
  admin token: $TOCK_ADMIN_TOKEN
  logs:        .run/logs/{dashboard,scheduler,worker}.log

Try it (README has more):
  curl -s -X POST http://$TOCK_HTTP_ADDR/api/v1/jobs \\
    -H "Authorization: Bearer $TOCK_ADMIN_TOKEN" -H 'Content-Type: application/json' \\
    -d '{"name":"hello","type":"ping","delay":"5s","payload":{"url":"http://$TOCK_HTTP_ADDR/healthz"}}'

Press Ctrl-C to stop.
MSG
wait -n "${pids[@]}"
echo "a service exited; see .run/logs/" >&2
exit 1
