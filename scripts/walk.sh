#!/usr/bin/env bash
# The files one resume request runs, measured with coverage (docs/architecture.md, "A resume's
# walk"): tests/tests/walk.rs resumes an asleep agent once, as deployed, and this lists every
# source file of the functions and of shared/ with a line that ran for it. Needs DynamoDB Local
# (started here if AWS_ENDPOINT_URL is unset) and rustup's llvm-tools (added here).
# Usage: scripts/walk.sh        (prints the files, their count last)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rustup component add llvm-tools >/dev/null 2>&1
tools="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
out="$root/target/walk"
mkdir -p "$out"
rm -f "$out"/*.profraw "$out"/walk.profdata
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  eval "$(scripts/start-dynamodb-local.sh)"
  trap 'scripts/stop-dynamodb-local.sh >/dev/null 2>&1 || true' EXIT
fi
export LLVM_PROFILE_FILE="$out/build-%p.profraw" CARGO_TARGET_DIR="$out/target" RUSTFLAGS="-C instrument-coverage --cfg walk"
cargo build -q -p snapwake-tests --test walk
bin="$(cargo test -q -p snapwake-tests --test walk --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "walk":
        print(m["executable"])')"
SNAPWAKE_WALK_PROFILE="$out/walk.profraw" LLVM_PROFILE_FILE="$out/rest-%p.profraw" \
  "$bin" --test-threads 1 >/dev/null
"$tools/llvm-profdata" merge -sparse "$out/walk.profraw" -o "$out/walk.profdata"
"$tools/llvm-cov" export -summary-only -instr-profile="$out/walk.profdata" "$bin" \
  | python3 -c '
import json, os, sys
root = sys.argv[1] + "/"
ran = []
for f in json.load(sys.stdin)["data"][0]["files"]:
    name = f["filename"]
    rel = name[len(root):] if name.startswith(root) else None
    if rel is None or not (rel.startswith("shared/src/") or rel.startswith("functions/")):
        continue
    if f["summary"]["lines"]["covered"] > 0:
        ran.append(rel)
for r in sorted(ran):
    print(r)
print(len(ran), "files")
' "$root"
