#!/usr/bin/env bash
# The clients' types, generated from infra/openapi.yaml: Python TypedDicts
# (clients/python/src/snapwake/schema.py, datamodel-code-generator) and TypeScript types
# (clients/typescript/schema.d.ts, openapi-typescript). Never edit either by hand.
#
#   clients/generate.sh          regenerate both
#   clients/generate.sh --check  regenerate nothing; fail (and show the difference) when either
#                                differs from what infra/openapi.yaml generates
#
# Needs the generators: the Python one in $PYTHON's environment (clients/python/requirements-dev.txt),
# the TypeScript one in clients/typescript/node_modules (npm ci). scripts/clients-test.sh
# installs both. SKIP_PY=1 or SKIP_TS=1 leaves one language out (its self-test).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
check=()
[[ "${1:-}" == "--check" ]] && check=(--check)

# TypedDicts, not pydantic models: the client's only dependency stays httpx.
[[ -n "${SKIP_PY:-}" ]] || "$python" -m datamodel_code_generator ${check[@]+"${check[@]}"} \
  --input infra/openapi.yaml --input-file-type openapi \
  --output-model-type typing.TypedDict --target-python-version 3.11 \
  --no-use-closed-typed-dict --use-union-operator --use-standard-collections \
  --enum-field-as-literal all --naming-strategy parent-prefixed \
  --openapi-scopes schemas paths parameters requestbodies --use-operation-id-as-name \
  --disable-timestamp --formatters builtin \
  --output clients/python/src/snapwake/schema.py

[[ -n "${SKIP_TS:-}" ]] || (cd clients/typescript && npx --no-install openapi-typescript ../../infra/openapi.yaml \
  -o schema.d.ts --root-types --root-types-no-schema-prefix ${check[@]+"${check[@]}"})
