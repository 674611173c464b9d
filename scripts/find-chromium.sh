#!/usr/bin/env bash
# Print the path of a Chromium or Chrome the browser tests can drive (stdout; what was tried
# goes to stderr). scripts/console-test.sh runs it; it works on Debian, Ubuntu and macOS.
#
#   scripts/find-chromium.sh [PYTHON]
#
# The first that runs (`--version` answers within 20 s and names Chrome or Chromium):
#   1. $CHROMIUM, else $CHROME_PATH, when set (a path or a name on PATH); nothing else is tried
#      when it does not run;
#   2. on PATH: chromium, chromium-browser, google-chrome, google-chrome-stable, chrome (Ubuntu's
#      /usr/bin/chromium-browser without the snap only prints how to install it: skipped);
#   3. macOS: Google Chrome.app or Chromium.app in /Applications or ~/Applications;
#   4. Debian (not Ubuntu, whose apt chromium is that snap stub), as root or with sudo:
#      `apt-get install chromium`;
#   5. Playwright's own Chromium, for PYTHON (a venv with Playwright installed): the one it
#      downloaded before, else `PYTHON -m playwright install chromium` (about 150 MB from
#      Playwright's CDN into ~/.cache/ms-playwright or ~/Library/Caches/ms-playwright).
#      SNAPWAKE_NO_BROWSER_DOWNLOAD=1 skips the download.
# Exits 1 with what to install when none runs.
set -euo pipefail

python="${1:-}"
tried=""

say() { echo "find-chromium: $*" >&2; }

# Run "$@" for at most 20 s (no `timeout` on macOS); its stdout, and its status (1 if killed).
briefly() {
  local out pid rc=0
  out="$(mktemp)"
  "$@" >"$out" 2>/dev/null </dev/null &
  pid=$!
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$out"
    return 1
  fi
  wait "$pid" || rc=$?
  cat "$out"
  rm -f "$out"
  return "$rc"
}

# A browser that runs, not a wrapper that prints how to install one.
works() {
  local exe="$1" version
  tried="$tried $exe"
  [[ -f "$exe" && -x "$exe" ]] || return 1
  version="$(briefly "$exe" --version)" || return 1
  case "$version" in
    *Chromium* | *Chrome*) say "using $exe ($version)"; return 0 ;;
  esac
  return 1
}

found() { printf '%s\n' "$1"; exit 0; }

# 1. Asked for by name.
for var in CHROMIUM CHROME_PATH; do
  case "$var" in CHROMIUM) wanted="${CHROMIUM:-}" ;; *) wanted="${CHROME_PATH:-}" ;; esac
  [[ -n "$wanted" ]] || continue
  exe="$(command -v "$wanted" 2>/dev/null || true)"
  if works "${exe:-$wanted}"; then found "${exe:-$wanted}"; fi
  say "$var=$wanted does not run (\`$wanted --version\` failed or named no Chrome or Chromium)"
  exit 1
done

# 2. On PATH.
for name in chromium chromium-browser google-chrome google-chrome-stable chrome; do
  exe="$(command -v "$name" 2>/dev/null || true)"
  if [[ -n "$exe" ]] && works "$exe"; then found "$exe"; fi
done

# 3. macOS application bundles.
if [[ "$(uname -s)" == Darwin ]]; then
  for app in "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
             "/Applications/Chromium.app/Contents/MacOS/Chromium" \
             "$HOME/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
             "$HOME/Applications/Chromium.app/Contents/MacOS/Chromium"; do
    if works "$app"; then found "$app"; fi
  done
fi

# 4. Debian's package, where apt has the real browser.
debian=no
if [[ -r /etc/os-release ]] && command -v apt-get >/dev/null; then
  # shellcheck disable=SC1091
  os="$(. /etc/os-release && echo " ${ID:-} ${ID_LIKE:-} ")"
  case "$os" in
    *" ubuntu "*) ;;
    *" debian "*) debian=yes ;;
  esac
fi
as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi
}
if [[ "$debian" == yes ]] && { [[ "$(id -u)" == 0 ]] || command -v sudo >/dev/null; }; then
  say "installing Debian's chromium (apt-get)"
  if as_root apt-get update -q >&2 &&
     as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2 &&
     works /usr/bin/chromium; then
    found /usr/bin/chromium
  fi
  say "apt-get install chromium did not give a browser that runs"
fi

# 5. Playwright's own build of Chromium, downloaded once.
managed() {
  "$python" - <<'PY' 2>/dev/null
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    print(p.chromium.executable_path)
PY
}
if [[ -n "$python" ]] && "$python" -c 'import playwright' 2>/dev/null; then
  exe="$(managed || true)"
  if [[ -n "$exe" ]] && works "$exe"; then found "$exe"; fi
  if [[ "${SNAPWAKE_NO_BROWSER_DOWNLOAD:-}" == 1 ]]; then
    say "SNAPWAKE_NO_BROWSER_DOWNLOAD=1: not downloading Playwright's Chromium"
  else
    say "no system browser; downloading Playwright's Chromium (python -m playwright install chromium)"
    if "$python" -m playwright install chromium >&2; then
      exe="$(managed || true)"
      if [[ -n "$exe" ]] && works "$exe"; then found "$exe"; fi
      say "Playwright's Chromium does not run here; on Linux it may lack system libraries:" \
        "\`$python -m playwright install-deps chromium\` (as root) installs them"
    else
      say "the download failed (no route to Playwright's CDN?)"
    fi
  fi
fi

say "no Chromium or Chrome that runs. Tried:${tried:- nothing}"
cat >&2 <<'EOF'
Install one, or point CHROMIUM at its executable:
  Debian:  apt-get install chromium
  Ubuntu:  snap install chromium (or Google Chrome's .deb)
  macOS:   Google Chrome, or `brew install --cask chromium`
  any:     let this script download Playwright's Chromium (needs network; unset
           SNAPWAKE_NO_BROWSER_DOWNLOAD)
EOF
exit 1
