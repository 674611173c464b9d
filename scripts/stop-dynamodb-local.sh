#!/usr/bin/env bash
# Stop the DynamoDB Local that start-dynamodb-local.sh started on DYNAMODB_LOCAL_PORT, if it did
# start one. The start's output exports DYNAMODB_LOCAL_PORT, so after
# `eval "$(scripts/start-dynamodb-local.sh)"` this stops that server from the same shell;
# `DYNAMODB_LOCAL_PORT=NNNN scripts/stop-dynamodb-local.sh` stops the one on NNNN. `--all` stops
# every one started from this checkout. With neither, it names those still running.
set -u
state="$(cd "$(dirname "$0")/.." && pwd)/.dynamodb-local"

stop_port() {
  local pidfile="$state/pid-$1" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  # Only the DynamoDB Local this pid file names: a pid left over from a reboot may be another's.
  case "$(ps -p "$pid" -o command= 2>/dev/null)" in
    *DynamoDBLocal*)
      kill "$pid" 2>/dev/null && for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      ;;
  esac
  rm -f "$pidfile"
}

running() {
  local f
  for f in "$state"/pid-*; do
    [ -f "$f" ] && echo "${f##*/pid-}"
  done
}

if [ "${1:-}" = --all ]; then
  for p in $(running); do stop_port "$p"; done
elif [ -n "${DYNAMODB_LOCAL_PORT:-}" ]; then
  stop_port "$DYNAMODB_LOCAL_PORT"
else
  ports=$(running | tr '\n' ' ')
  if [ -n "$ports" ]; then
    echo "DYNAMODB_LOCAL_PORT is not set; started from this checkout and maybe running on: $ports" >&2
    echo "stop one with DYNAMODB_LOCAL_PORT=<port> $0, or all with $0 --all" >&2
  fi
fi
exit 0
