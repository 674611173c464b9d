#!/usr/bin/env bash
# Benchmarks (quality.md): run them against DynamoDB Local and the simulated AgentKit, and
# write BENCHMARKS.md from what they print. Numbers from a shared 2-core machine are noisy:
# compare ratios and medians measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."

trap 'scripts/stop-dynamodb-local.sh' EXIT
eval "$(scripts/start-dynamodb-local.sh)"

out=$(mktemp)
{
  echo "# Benchmarks"
  echo
  echo "Produced by \`scripts/bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -m))."
  echo "Each section says what it measures; the wake numbers come from"
  echo "\`cargo bench -p snapwake-tests --bench wake\`."
  echo
  cargo bench -q -p snapwake-tests --bench wake 2>/dev/null
} >"$out"
mv "$out" BENCHMARKS.md
cat BENCHMARKS.md
