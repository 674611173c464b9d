#!/usr/bin/env bash
# Stop the DynamoDB Local that start-dynamodb-local.sh started on DYNAMODB_LOCAL_PORT (default
# 8000), if it did start one.
set -u
pidfile="$(cd "$(dirname "$0")/.." && pwd)/.dynamodb-local/pid-${DYNAMODB_LOCAL_PORT:-8000}"
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
kill "$pid" 2>/dev/null && for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -9 "$pid" 2>/dev/null || true
rm -f "$pidfile"
