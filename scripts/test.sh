#!/usr/bin/env bash
# The project's one test command (README, .ci/run): formatting, lints, then every test of the
# workspace against a DynamoDB Local it installs, starts and stops itself. Runs on a fresh
# machine with Rust, Java 17 and Node 20.
set -euo pipefail
cd "$(dirname "$0")/.."
# A fresh build gains nothing from incremental state, and it costs gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "== the pinned toolchain (rust-toolchain.toml)"
scripts/toolchain.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== the supply chain: cargo deny, the functions' bans, rust-version (docs/supply-chain.md)"
scripts/check-deps.sh

echo "== infra/: sam-translator and cfn-lint on the template"
scripts/lint-infra.sh

echo "== DynamoDB Local"
trap 'scripts/stop-dynamodb-local.sh' EXIT
eval "$(scripts/start-dynamodb-local.sh)"

echo "== cargo test --workspace"
# --no-fail-fast: one run reports every failing test binary, not only the first.
cargo test --workspace --all-features --no-fail-fast

echo "== conformance: schemathesis against snapwake serve --demo"
scripts/conformance.sh

echo "== the My Agents page in headless Chromium"
scripts/console-test.sh
