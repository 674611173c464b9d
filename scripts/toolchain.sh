#!/usr/bin/env bash
# Makes the toolchain rust-toolchain.toml pins available, then prints its rustc version.
#
# Where rustup can download, it installs the pin. Where it cannot (a machine with one
# toolchain, installed as `stable`, and no route to static.rust-lang.org), and that `stable`
# is exactly the pinned version, the pinned name is pointed at it: the same compiler, so the
# build is the one the pin describes. Any other `stable` is refused, never silently used.
set -euo pipefail
cd "$(dirname "$0")/.."

pin="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)"
[ -n "$pin" ] || { echo "toolchain: no channel in rust-toolchain.toml" >&2; exit 1; }

if rustup run "$pin" rustc --version >/dev/null 2>&1; then
  rustup run "$pin" rustc --version
  exit 0
fi

stable="$(rustup run stable rustc --version 2>/dev/null || true)"
case "$stable" in
  "rustc $pin "*)
    host="$(rustup run stable rustc -vV | sed -n 's/^host: //p')"
    toolchains="${RUSTUP_HOME:-$HOME/.rustup}/toolchains"
    # rustup's `toolchain link` refuses names that look like a release, so the link is made
    # the way rustup lays out its own directory: toolchains/<name>-<host>.
    ln -sfn "$(rustup run stable rustc --print sysroot)" "$toolchains/$pin-$host"
    echo "toolchain: $pin is this machine's stable ($toolchains/$pin-$host)" >&2
    ;;
  *)
    rustup toolchain install "$pin" --profile minimal --component clippy,rustfmt
    ;;
esac
rustup run "$pin" rustc --version
