#!/usr/bin/env bash
# One TLS, HTTP and crypto stack in every function (issue "[11] Lean functions"): fails if a
# function's dependency graph holds two versions of any crate in WATCHED (two rustls, two
# hypers, two digest generations... each one is hundreds of KB in the binary), or both
# crypto providers (ring and aws-lc-rs).
#
#   scripts/check-deps.sh            (exit 0: one stack; exit 1: the duplicates are listed)
#
# Only `cargo tree`: nothing is compiled. It reads Cargo.lock (--locked: a lockfile that would
# change is an error) and the manifests a build already fetched, so it runs offline after a
# build (CARGO_NET_OFFLINE=true to make sure). The graph is the one of Lambda's two
# architectures (provided.al2023), arm64 and x86_64 Linux, with normal dependencies only:
# `--target all` would add Windows/wasm-only crates, which are not in the binaries and which a
# Linux machine never downloaded (it fails offline). CHECK_DEPS_TARGETS overrides the targets.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(snapwake-list snapwake-create snapwake-resume snapwake-delete snapwake-deploy)
read -r -a targets <<<"${CHECK_DEPS_TARGETS:-aarch64-unknown-linux-gnu x86_64-unknown-linux-gnu}"
WATCHED=(rustls rustls-webpki tokio-rustls hyper hyper-rustls hyper-util h2 http http-body
  ring aws-lc-rs aws-lc-sys sha2 hmac digest)

failed=0
for pkg in "${packages[@]}"; do
  for target in "${targets[@]}"; do
    # Every package of the graph, once per version: "name vX.Y.Z".
    all=$(cargo tree --locked -e normal -p "$pkg" --target "$target" \
      --prefix none -f '{p}' | awk 'NF { print $1, $2 }' | sort -u)
    # `-d --depth 0`: only the packages that are there in more than one version.
    dups=$(cargo tree --locked -d -e normal -p "$pkg" --target "$target" \
      --depth 0 --prefix none -f '{p}' | awk 'NF { print $1, $2 }' | sort -u)
    for crate in "${WATCHED[@]}"; do
      versions=$(awk -v c="$crate" '$1 == c { sub(/^v/, "", $2); print $2 }' <<<"$dups")
      if [[ -n "$versions" ]]; then
        echo "check-deps: $pkg ($target) has $crate in more than one version:" \
          $versions >&2
        for v in $versions; do
          echo "  why $v: cargo tree -e normal -p $pkg --target $target -i $crate@$v" >&2
        done
        failed=1
      fi
    done
    if grep -q '^ring ' <<<"$all" && grep -q '^aws-lc-rs ' <<<"$all"; then
      echo "check-deps: $pkg ($target) has two crypto providers, ring and aws-lc-rs" >&2
      echo "  see: cargo tree -e normal -p $pkg --target $target -i aws-lc-rs" >&2
      failed=1
    fi
  done
done

# The workspace's rust-version must be one the locked dependencies build with: none of them
# may ask for a newer Rust than we say we need (Cargo.toml's rust-version once said 1.85 while
# aws-config needed 1.94.1).
msrv=$(cargo metadata --locked --format-version 1 | python3 -c '
import json, sys
m = json.load(sys.stdin)
own = set(m["workspace_members"])
def key(v): return tuple(int(x) for x in v.split("."))
ours = {p["rust_version"] for p in m["packages"] if p["id"] in own and p.get("rust_version")}
theirs = [(p["rust_version"], p["name"], p["version"]) for p in m["packages"]
          if p["id"] not in own and p.get("rust_version")]
need = max(theirs, key=lambda t: key(t[0]))
if len(ours) != 1:
    print(f"FAIL the workspace members say {sorted(ours)}: one rust-version for all"); sys.exit()
said = ours.pop()
if key(said) < key(need[0]):
    print(f"FAIL rust-version {said}, but {need[1]} {need[2]} needs {need[0]}")
else:
    print(f"ok rust-version {said} (the locked dependencies need at most {need[0]}, {need[1]})")
')
echo "check-deps: ${msrv#* }" >&2
if [[ "$msrv" == FAIL* ]]; then
  failed=1
fi

if ((failed)); then
  echo "check-deps: FAILED: one TLS/HTTP/crypto stack per function (the TLS and AWS notes in Cargo.toml), and a rust-version the lock file honours" >&2
  exit 1
fi
echo "check-deps: ${#packages[@]} functions × ${#targets[@]} targets: one version each of ${WATCHED[*]}; one crypto provider"
