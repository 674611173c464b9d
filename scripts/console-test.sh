#!/usr/bin/env bash
# The My Agents page in a real browser: a Chromium or Chrome (scripts/find-chromium.sh: $CHROMIUM,
# the system's, Debian's apt package, else Playwright's own download) driven by Playwright for
# Python (pinned in console/tests/requirements.txt, installed into target/console-venv), against
# `snapwake serve --demo` processes the tests start themselves (console/tests/conftest.py).
# Screenshots of the main states go to target/console-screenshots/ (README, "My Agents page").
# `--prepare` only installs Playwright and finds the browser.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

venv=target/console-venv
requirements=console/tests/requirements.txt
if [[ ! -x "$venv/bin/pytest" ]] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

# The browser, found (or installed) once; `--prepare` stops here (scripts/test.sh runs it in
# the background while the Rust tests run).
found="$venv/chromium-path"
if [[ ! -s "$found" ]] || [[ ! -x "$(cat "$found")" ]]; then
  scripts/find-chromium.sh "$venv/bin/python" >"$found"
fi
CHROMIUM="$(cat "$found")"
if [[ "${1:-}" == "--prepare" ]]; then
  echo "console-test: prepared (Playwright in $venv, the browser $CHROMIUM)"
  exit 0
fi

# SNAPWAKE_BIN: a snapwake already built (as scripts/conformance.sh), else built here.
if [[ -z "${SNAPWAKE_BIN:-}" ]]; then
  cargo build -q -p snapwake-cli
  SNAPWAKE_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/snapwake"
fi

shots=target/console-screenshots
rm -rf "$shots"
mkdir -p "$shots"
export SNAPWAKE_BIN CHROMIUM \
  CONSOLE_SCREENSHOTS="$PWD/$shots"
# Every server a test starts is its own process, stopped by the test's fixture (and, on Linux,
# told to stop by the kernel if pytest dies first: PR_SET_PDEATHSIG).
"$venv/bin/python" -m pytest console/tests -q -p no:cacheprovider "$@"
echo "screenshots: $shots/"
