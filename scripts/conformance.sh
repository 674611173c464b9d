#!/usr/bin/env bash
# Conformance of the API to its description: schemathesis (pinned in infra/requirements.txt,
# installed by scripts/lint-infra.sh) against `snapwake serve --demo`, with the settings of
# infra/schemathesis.toml (one seed, so a run is repeatable). Any failure fails: a bug in the
# code or in infra/openapi.yaml, to be fixed there.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/infra-venv
[[ -x "$venv/bin/schemathesis" ]] || scripts/lint-infra.sh

cargo build -q -p snapwake-cli
port="${SNAPWAKE_CONFORMANCE_PORT:-18089}"
"${CARGO_TARGET_DIR:-target}/debug/snapwake" serve --demo --port "$port" > target/conformance-serve.log 2>&1 &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if curl -fs -o /dev/null -H "X-Snapwake-User: alice" "http://127.0.0.1:$port/v1/capabilities"; then
    break
  fi
  sleep 0.1
done

# The description as the server serves it (GET /v1/openapi.json, infra/openapi.yaml compiled in).
"$venv/bin/schemathesis" --config-file infra/schemathesis.toml \
  run "http://127.0.0.1:$port/v1/openapi.json" --url "http://127.0.0.1:$port" --no-color
