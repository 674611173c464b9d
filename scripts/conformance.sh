#!/usr/bin/env bash
# Conformance of the API to its description: schemathesis (pinned in infra/requirements.txt,
# installed by scripts/lint-infra.sh) against `snapwake serve --demo`, with the settings of
# infra/schemathesis.toml (one seed, so a run is repeatable). Any failure fails: a bug in the
# code or in infra/openapi.yaml, to be fixed there.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/infra-venv
[[ -x "$venv/bin/schemathesis" ]] || scripts/lint-infra.sh

# SNAPWAKE_BIN: a snapwake already built (scripts/test.sh passes the one its test compile
# made, which a `cargo build -p snapwake-cli` with other features would compile again).
bin="${SNAPWAKE_BIN:-}"
if [[ -z "$bin" ]]; then
  cargo build -q -p snapwake-cli
  bin="${CARGO_TARGET_DIR:-target}/debug/snapwake"
fi
# Port 0: the server binds a free port itself and says which ("snapwake serving on
# http://127.0.0.1:PORT ..."); SNAPWAKE_CONFORMANCE_PORT picks one instead.
mkdir -p target
log=target/conformance-serve.log
: >"$log" # now, not in the background: the port is read from it
"$bin" serve --demo --port "${SNAPWAKE_CONFORMANCE_PORT:-0}" >"$log" 2>&1 &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT

port=
for _ in $(seq 1 200); do
  port="$(sed -n 's|.*snapwake serving on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log")"
  [[ -n "$port" ]] && break
  kill -0 "$serve" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "conformance: snapwake serve did not say its port:" >&2
  cat "$log" >&2
  exit 1
fi

for _ in $(seq 1 100); do
  if curl -fs -o /dev/null -H "X-Snapwake-User: alice" "http://127.0.0.1:$port/v1/capabilities"; then
    break
  fi
  sleep 0.1
done

# The description as the server serves it (GET /v1/openapi.json, infra/openapi.yaml compiled in).
"$venv/bin/schemathesis" --config-file infra/schemathesis.toml \
  run "http://127.0.0.1:$port/v1/openapi.json" --url "http://127.0.0.1:$port" --no-color
