#!/usr/bin/env bash
# Build the five functions for Lambda (`provided.al2023`) and zip each `bootstrap`, as the
# template's functions take them: target/lambda/<function>/bootstrap.zip.
#
#   scripts/package.sh [arm64|x86_64]     (default arm64, the template's default)
#
# cargo-lambda comes from pip (pinned below, with the zig it cross-links with) into
# target/package-venv; arm64 needs the Rust target, which rustup adds. Prints each zip's size.
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-arm64}"
case "$arch" in
  arm64) target=aarch64-unknown-linux-gnu flag=--arm64 ;;
  x86_64) target=x86_64-unknown-linux-gnu flag=--x86-64 ;;
  *) echo "usage: scripts/package.sh [arm64|x86_64]" >&2; exit 2 ;;
esac

venv=target/package-venv
if [[ ! -x "$venv/bin/cargo-lambda" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==1.8.6"
fi
export PATH="$PWD/$venv/bin:$PATH"
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

functions=(list create resume delete deploy announce)
cargo lambda build --release "$flag" $(printf -- '-p snapwake-%s ' "${functions[@]}") --output-format zip

for f in "${functions[@]}"; do
  zip="target/lambda/$f/bootstrap.zip"
  [[ -f "$zip" ]] || { echo "missing $zip" >&2; exit 1; }
  printf '%-8s %s bytes\n' "$f" "$(wc -c <"$zip" | tr -d ' ')"
done
