#!/usr/bin/env bash
# The supply chain (docs/supply-chain.md): cargo-deny's four checks on the workspace
# (deny.toml: advisories, licences, bans, sources), its bans again per function
# (supply-chain/functions.deny.toml), no deprecated crate, and a rust-version the lock file
# honours.
#
#   scripts/check-deps.sh     (exit 0: all pass; exit 1: what failed is printed)
#
# cargo-deny is installed into target/tools at the version pinned below. Advisories come from
# RustSec's database: fetched when GitHub answers, otherwise the snapshot committed in
# supply-chain/advisory-db (CI has no route to GitHub), so the check runs offline.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

CARGO_DENY_VERSION=0.20.2
tools="$root/target/tools"
deny="$tools/bin/cargo-deny"
if ! { [[ -x "$deny" ]] && "$deny" --version | grep -qx "cargo-deny $CARGO_DENY_VERSION"; }; then
  echo "check-deps: installing cargo-deny $CARGO_DENY_VERSION into target/tools" >&2
  # Its own target directory: the workspace's profile settings do not apply to it.
  CARGO_TARGET_DIR="$tools/build" cargo install --quiet --locked --root "$tools" \
    cargo-deny --version "$CARGO_DENY_VERSION"
fi

# deny.toml reads the database from target/advisory-dbs. cargo-deny keeps a clone of
# db-urls' repository in <db-path>/advisory-db-<hash of the URL>; the snapshot is put there
# as a one-commit git repository dated as the snapshot (cargo-deny reads HEAD's date).
dbs="$root/target/advisory-dbs"
db="$dbs/advisory-db-3157b0e258782691"
offline=()
# A fetch that hangs is cut off where `timeout` exists (GNU coreutils; macOS has none).
bounded=()
command -v timeout >/dev/null && bounded=(timeout 60)
if [[ "${SNAPWAKE_ADVISORY_DB:-}" != snapshot ]] &&
  ${bounded[@]+"${bounded[@]}"} "$deny" fetch db >/dev/null 2>&1; then
  echo "check-deps: advisories: RustSec's database, fetched now" >&2
else
  snapshot="$root/supply-chain/advisory-db"
  date=$(sed -n 's/^date: //p' "$snapshot/SNAPSHOT")
  made=$(git -C "$db" log -1 --format=%B 2>/dev/null || true)
  if [[ "$made" != "snapshot $date"* ]]; then
    rm -rf "$db" && mkdir -p "$db"
    cp -R "$snapshot/." "$db/"
    (
      cd "$db"
      git init -q
      git add -A
      GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" \
        git -c user.name=snapwake -c user.email=snapwake@localhost commit -q -m "snapshot $date"
    )
  fi
  echo "check-deps: advisories: the snapshot in supply-chain/advisory-db ($date)" >&2
  offline=(--offline)
fi

failed=0
# cargo-deny reads the graph with `cargo metadata`, which wants every locked package of every
# platform (Windows and wasm ones too), and `--offline` forbids downloading them: on a machine
# that only ever built for Linux they are missing. Fetch them first (crates.io, no GitHub).
cargo fetch --locked >/dev/null 2>&1 || cargo fetch --locked
echo "check-deps: cargo deny check (workspace)" >&2
"$deny" ${offline[@]+"${offline[@]}"} --locked check || failed=1

# The functions' own bans, per Lambda architecture: the workspace's graph also holds the CLI
# and the tests, which may carry what a function must not.
for fn in list create resume delete deploy announce; do
  for target in aarch64-unknown-linux-gnu x86_64-unknown-linux-gnu; do
    if ! "$deny" --offline --locked --log-level error --config supply-chain/functions.deny.toml \
      --manifest-path "functions/$fn/Cargo.toml" --exclude-dev --target "$target" \
      check bans; then
      echo "check-deps: the $fn function ($target) fails supply-chain/functions.deny.toml" >&2
      failed=1
    fi
  done
done

# A crate its author marked deprecated in its version ("0.9.34+deprecated"): no advisory may
# exist for it yet.
deprecated=$(awk '/^name = /{n=$3} /^version = ".*deprecated/{print n, $3}' Cargo.lock | tr -d '"')
if [[ -n "$deprecated" ]]; then
  echo "check-deps: deprecated crates in Cargo.lock: $deprecated" >&2
  failed=1
fi

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
  echo "check-deps: FAILED (docs/supply-chain.md says what each check is for)" >&2
  exit 1
fi
echo "check-deps: cargo deny (advisories, licences, bans, sources); the functions' bans; no deprecated crate; rust-version"
