#!/usr/bin/env bash
# The Python and TypeScript clients (clients/, docs/clients.md), against the real thing:
#
# 1. their generated types are what infra/openapi.yaml generates (clients/generate.sh --check),
#    and that check fails on a changed schema (it is run once on a changed copy);
# 2. Python: black and mypy --strict on the client and the Studio example; the client's tests
#    and the example's against `snapwake serve --demo` processes they start; a wheel built,
#    installed into a fresh virtualenv, and imported there;
# 3. TypeScript: tsc on the client, its tests and a typed use; its tests, one against `serve`.
#
# The tools are pinned (clients/python/requirements-dev.txt into target/clients-venv;
# clients/typescript/package-lock.json by npm ci). `--prepare` only installs them (scripts/test.sh
# runs that in the background while Rust compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

venv=target/clients-venv
requirements=clients/python/requirements-dev.txt
if [[ ! -x "$venv/bin/pytest" ]] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi
ts=clients/typescript
if ! cmp -s "$ts/package-lock.json" "$ts/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$ts/package-lock.json" "$ts/node_modules/.package-lock.json.installed"
fi
if [[ "${1:-}" == "--prepare" ]]; then
  echo "clients-test: prepared (Python tools in $venv, TypeScript's in $ts/node_modules)"
  exit 0
fi
export PYTHON="$root/$venv/bin/python"

# SNAPWAKE_BIN: a snapwake already built (as scripts/conformance.sh), else built here.
if [[ -z "${SNAPWAKE_BIN:-}" ]]; then
  cargo build -q -p snapwake-cli
  SNAPWAKE_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/snapwake"
fi
export SNAPWAKE_BIN

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

echo "== the generated types match infra/openapi.yaml"
clients/generate.sh --check
# ... and the check notices a schema changed without regenerating: a copy with one more code.
mkdir -p "$scratch/drift/infra" "$scratch/drift/clients/python/src/snapwake" "$scratch/drift/$ts"
cp clients/generate.sh "$scratch/drift/clients/"
cp clients/python/src/snapwake/schema.py "$scratch/drift/clients/python/src/snapwake/"
cp "$ts/schema.d.ts" "$scratch/drift/$ts/"
ln -s "$root/$ts/node_modules" "$scratch/drift/$ts/node_modules"
sed 's/^        - STORE_UNAVAILABLE$/&\n        - A_NEW_CODE/' infra/openapi.yaml >"$scratch/drift/infra/openapi.yaml"
cmp -s infra/openapi.yaml "$scratch/drift/infra/openapi.yaml" && { echo "the drift self-test changed nothing" >&2; exit 1; }
# Each language on its own (the other left out), so neither hides the other's miss.
for leave_out in SKIP_TS SKIP_PY; do
  if env "$leave_out=1" "$scratch/drift/clients/generate.sh" --check >"$scratch/drift.log" 2>&1; then
    echo "clients/generate.sh --check passed a changed schema (with $leave_out)" >&2
    exit 1
  fi
done
echo "   (and it fails on a changed schema, for both languages)"

echo "== Python: black --check, mypy --strict"
(cd clients/python && "$PYTHON" -m black --check --quiet . && MYPYPATH=src "$PYTHON" -m mypy \
  --strict --explicit-package-bases src examples/studio/app.py)

echo "== Python: the client's and the Studio example's tests, against snapwake serve"
(cd clients/python && PYTHONPATH=src "$PYTHON" -m pytest -q -p no:cacheprovider)

echo "== Python: a wheel, installed into a fresh virtualenv"
"$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$scratch/dist" clients/python
python3 -m venv "$scratch/fresh"
"$scratch/fresh/bin/pip" install --quiet --disable-pip-version-check "$scratch"/dist/snapwake-*.whl
(cd "$scratch" && fresh/bin/python - <<'PY'
import snapwake, snapwake.schema, importlib.resources, typing
assert snapwake.Client and snapwake.AsyncClient
assert sorted(snapwake.PROBLEMS) == sorted(typing.get_args(snapwake.ProblemCode))
assert importlib.resources.files("snapwake").joinpath("py.typed").is_file()
print(f"   snapwake {snapwake.__version__} imports from {snapwake.__file__}")
PY
)

echo "== TypeScript: tsc, then the tests"
(cd "$ts" && npx --no-install tsc -p . && node --test --test-reporter=spec test/)
