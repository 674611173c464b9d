#!/usr/bin/env bash
# Benchmarks (docs/architecture.md, "Quality bars"): run them against DynamoDB Local and the simulated AgentKit, and
# write BENCHMARKS.md from what they print. Numbers from a shared 2-core machine are noisy:
# compare ratios and medians measured in the same run.
#
# Builds the five function binaries in release first (LTO, stripped: minutes on 2 cores) for
# the size and cold-start sections; the cargo benches use the `bench` profile.
#
# BENCH_AGAINST=<commit> adds the wake and list figures of that commit measured in the same
# sitting (scripts/bench_against.py: interleaved runs, about 4 minutes per run and side, plus
# building that commit's benches the first time). BENCH_AGAINST_RUNS sets the runs (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each bench gets a DynamoDB Local of its own, started fresh on a port of its own: a server the
# tests left running, full of their tables, measured slower than a fresh one. The port is a free
# one chosen by the first start (BENCH_DYNAMODB_LOCAL_PORT picks it), then kept: each start
# exports DYNAMODB_LOCAL_PORT.
if [[ -n "${BENCH_DYNAMODB_LOCAL_PORT:-}" ]]; then
  export DYNAMODB_LOCAL_PORT="$BENCH_DYNAMODB_LOCAL_PORT"
else
  unset DYNAMODB_LOCAL_PORT
fi
fresh_dynamodb() {
  [[ -z "${DYNAMODB_LOCAL_PORT:-}" ]] || scripts/stop-dynamodb-local.sh
  eval "$(scripts/start-dynamodb-local.sh)"
}
# The size of a file in bytes (`stat -c %s` is GNU's, `stat -f %z` BSD's).
size() { wc -c <"$1" | tr -d ' '; }
trap 'scripts/stop-dynamodb-local.sh' EXIT
fresh_dynamodb

functions=(resume list create delete deploy announce)
target="${CARGO_TARGET_DIR:-target}"
echo "building the function binaries in release (LTO: this takes minutes)..." >&2
cargo build -q --release $(printf -- '-p snapwake-%s ' "${functions[@]}") >&2
# A copy, so later builds into a shared target directory cannot swap them under us.
bins=$(mktemp -d)
trap 'rm -rf "$bins"; scripts/stop-dynamodb-local.sh' EXIT
for f in "${functions[@]}"; do cp "$target/release/$f" "$bins/$f"; done

out=$(mktemp)
{
  echo "# Benchmarks"
  echo
  echo "Produced by \`scripts/bench.sh\` on $(date -u +%Y-%m-%d) ($(getconf _NPROCESSORS_ONLN) cores, $(uname -m))."
  echo "Each section says what it measures; the cargo sections come from"
  echo "\`cargo bench -p snapwake-tests --bench <wake|storm_cost|list|deploy|peak_rss>\` (\`bench\` profile),"
  echo "cold start and size from the release binaries (\`cargo build --release\`)."
  echo
  for bench in wake storm_cost list deploy tick monday lunch sweep_scale events; do
    echo "running the $bench bench..." >&2
    fresh_dynamodb 2>/dev/null
    cargo bench -q -p snapwake-tests --bench "$bench" 2>/dev/null
  done

  echo "measuring cold starts..." >&2
  python3 scripts/cold_start.py --runs 5 $(printf -- "$bins/%s " "${functions[@]}")
  echo "measuring cold starts to the first answer..." >&2
  SNAPWAKE_BENCH_BINARIES="$bins" cargo bench -q -p snapwake-tests --bench cold_answer 2>/dev/null

  echo "## Release binary size (stripped)"
  echo
  echo "\`cargo build --release\`: \`opt-level = \"z\"\`, \`panic = \"abort\"\`, LTO, one codegen unit, stripped (MB = MiB)."
  echo
  echo "| binary | size | budget |"
  echo "|---|---|---|"
  for f in "${functions[@]}"; do
    bytes=$(size "$bins/$f")
    awk -v f="$f" -v b="$bytes" 'BEGIN {
      mb = b / 1048576; printf "| %s | %.2f MB | ≤ 6 MB (%s) |\n", f, mb, (mb <= 6 ? "met" : "MISSED") }'
  done
  echo

  echo "## Lambda packages"
  echo
  if ls target/lambda/*/bootstrap.zip >/dev/null 2>&1; then
    echo "\`scripts/package.sh\` (cargo-lambda, \`provided.al2023\`): each function's \`bootstrap.zip\` as the template deploys it."
    echo
    echo "| function | zip |"
    echo "|---|---|"
    for f in "${functions[@]}"; do
      zip="target/lambda/$f/bootstrap.zip"
      [[ -f "$zip" ]] && awk -v f="$f" -v b="$(size "$zip")" 'BEGIN { printf "| %s | %.2f MB |\n", f, b / 1048576 }'
    done
  else
    echo "Not measured: run \`scripts/package.sh\` first."
  fi
  echo

  # The figures of commit 7aebc75 (before [11]: two TLS stacks, opt-level "s", unwind), measured
  # with this script's own commands on 2026-12-03, kept so each run shows what changed.
  echo "## Before and after [11] (one network stack, \`opt-level = \"z\"\`, \`panic = \"abort\"\`)"
  echo
  echo "Before: commit 7aebc75, measured by the same commands on 2026-12-03 (x86_64). After: this run (sections above)."
  echo
  echo "| what | before |"
  echo "|---|---|"
  echo "| stripped release binary | 10.22 MB (deploy) – 10.69 MB (resume) |"
  echo "| \`cargo lambda\` zip, arm64 | 3.64 MB (deploy) – 3.88 MB (resume) |"
  echo "| exec → first \`next\`, median | 4.5 – 5.0 ms |"
  echo "| exec → first answered resume | 91.2 ms: init 7.3, to DynamoDB 1.5, DynamoDB 6.9, to AgentKit 26.3, AgentKit 0.2 |"
  echo "| exec → first answered list | 36.6 ms: init 10.7, to DynamoDB 1.4, DynamoDB 5.7, to AgentKit 27.5, AgentKit 0.5 |"
  echo
  echo "The cold-start rows above came from a fresh DynamoDB Local in an earlier sitting, and a fresh server's first calls are slow: read them for their parts, not as a before/after. The wake, list and cold-start figures of both sides measured in one sitting, on a warmed server, are the last section when \`BENCH_AGAINST=7aebc75 scripts/bench.sh\` ran (there, 7aebc75 answered its first resume in 27.0 ms and this change in 25.3 ms)."
  echo

  # The storm-cost figures of commit 72afb4b (before [15]: every caller held its request until
  # the agent was awake), measured with this checkout's storm_cost bench built against that
  # commit on 2026-12-04, kept so each run shows what changed.
  echo "## Before and after [15] (short requests)"
  echo
  echo "Before: commit 72afb4b with this checkout's \`tests/benches/storm_cost.rs\` built against it, measured on 2026-12-04 on a fresh DynamoDB Local, right before the same bench of the change (x86_64, 2 cores). That code ignores \`Prefer\`: each caller was held until the agent was awake (\`SNAPWAKE_WAIT_S\` 20 s). After: the *What a wake storm costs* section above."
  echo
  echo "| 500 callers honouring \`Retry-After\` | before | bar |"
  echo "|---|---|---|"
  echo "| Resumes, errors | 1, 0 | 1, 0 |"
  echo "| time to 200, p50 / p99 / max | 2.04 s / 3.05 s / 3.07 s | p99 ≤ 3.50 s |"
  echo "| request-seconds per caller | 2.416 s | ≤ 0.25 s |"
  echo "| requests per caller | 1.00 | |"
  echo "| peak requests open at once | 500 (100%) | ≤ 50 (10%) |"
  echo "| Lambda GB-seconds (256 MB) | 302.08 | |"
  echo "| AgentKit calls (GetSession) | 7 (4) | ≤ 15 |"
  echo "| DynamoDB calls per caller | 6.38 | |"
  echo
  echo "The 100-caller storm before: p99 3.05 s, 2.387 request-seconds per caller, 100 open at once, 59.70 GB-s, 7 AgentKit calls."
  echo

  echo "running the peak_rss bench..." >&2
  fresh_dynamodb 2>/dev/null
  cargo bench -q -p snapwake-tests --bench peak_rss 2>/dev/null

  if [[ -n "${BENCH_AGAINST:-}" ]]; then
    echo "comparing with $BENCH_AGAINST..." >&2
    scripts/stop-dynamodb-local.sh
    BENCH_DYNAMODB_LOCAL_PORT="$DYNAMODB_LOCAL_PORT" \
      python3 scripts/bench_against.py "$BENCH_AGAINST" --runs "${BENCH_AGAINST_RUNS:-3}"
  fi
} >"$out"
mv "$out" BENCHMARKS.md
cat BENCHMARKS.md
