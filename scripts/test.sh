#!/usr/bin/env bash
# The project's one test command (README, .ci/run): formatting, lints, then every test of the
# workspace. Runs on a fresh machine with Rust; installs anything else it needs itself.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features -- -D warnings

echo "== cargo test --workspace"
cargo test --workspace --all-features
