#!/usr/bin/env bash
# The project's one test command (README, .ci/run): formatting, lints, the supply chain, the
# template, then every test of the workspace against a DynamoDB Local it installs, starts and
# stops itself, the API description, the Python and TypeScript clients (against `snapwake serve`)
# and the My Agents page. Runs on a fresh machine with Rust,
# Java 17, Node 20 and Python 3.
#
# On two cores the time goes to compiling and to tests that wait (on DynamoDB Local, the
# simulator, leases). So (docs/testing.md, "The test command"):
# - one compile serves the lints and the tests: clippy runs as the compiler of the
#   workspace's own crates (RUSTC_WORKSPACE_WRAPPER), so `-D warnings` fails the build, and
#   the dependencies are compiled once, for the tests;
# - what needs no test binary (the supply chain's tools, the template's linters, the page's
#   browser) is installed and run in the background while the tests run;
# - the tests run side by side across binaries (cargo-nextest, .config/nextest.toml) when the
#   machine has it, else binary by binary (cargo test);
# - every step's time is printed as it ends, and all of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# A fresh build gains nothing from incremental state, and it costs gigabytes of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

logs=target/ci
mkdir -p "$logs"
started=$SECONDS
times=()
step_name=""
step_at=$SECONDS
step() {
  [[ -n "$step_name" ]] && times+=("$(printf '%5ds  %s' $((SECONDS - step_at)) "$step_name")")
  step_name="$1"
  step_at=$SECONDS
  echo "== $1 (at $((SECONDS - started)) s)"
}
summary() {
  step ""
  echo "== step times"
  printf '%s\n' "${times[@]}"
  printf '%5ds  %s\n' $((SECONDS - started)) "in all"
}

# Background jobs: their pids in bg_<name> (no associative arrays: macOS has bash 3), their
# output in target/ci/<name>.log.
bg_pids=()
background() {
  local name="$1"
  shift
  # At the lowest priority (unless BG_NICE says otherwise): the tests' timings must not depend
  # on what runs beside them.
  ( t=$SECONDS; nice -n "${BG_NICE:-19}" "$@"; echo "== $name took $((SECONDS - t)) s" ) >"$logs/$name.log" 2>&1 &
  printf -v "bg_$name" '%s' "$!"
  bg_pids+=("$!")
  echo "   ($name in the background: $logs/$name.log)"
}
await() {
  local name="$1" rc=0 pid_var="bg_$1"
  wait "${!pid_var}" || rc=$?
  cat "$logs/$name.log"
  if ((rc != 0)); then
    echo "== $name FAILED (exit $rc)" >&2
    return "$rc"
  fi
}

# The ten slowest tests of a JUnit report.
slowest() {
  [[ -f "$1" ]] || return 0
  echo "   the slowest tests:"
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), c.get("classname", ""), c.get("name", ""))
         for c in ET.parse(sys.argv[1]).iter("testcase")]
for t, binary, name in sorted(cases, reverse=True)[:10]:
    print(f"   {t:7.1f}s  {binary} {name}")
PY
}

stop_all() {
  for pid in ${bg_pids[@]+"${bg_pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
  [[ -n "${DYNAMODB_LOCAL_PORT:-}" ]] && scripts/stop-dynamodb-local.sh
  return 0
}
trap stop_all EXIT

step "the pinned toolchain (rust-toolchain.toml)"
scripts/toolchain.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "DynamoDB Local, and in the background: the template's linters, the page's browser, the clients' tools"
eval "$(scripts/start-dynamodb-local.sh)"
background infra scripts/lint-infra.sh
background console scripts/console-test.sh --prepare
background clients scripts/clients-test.sh --prepare

step "one compile for clippy (-D warnings) and the tests"
# clippy-driver compiles the workspace's crates as rustc would, and lints them as `cargo clippy
# --all-targets -- -D warnings` does; CLIPPY_ARGS is how cargo-clippy passes it the lint flags.
export RUSTC_WORKSPACE_WRAPPER="${RUSTC_WORKSPACE_WRAPPER:-$(rustup which clippy-driver)}"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
cargo test --workspace --all-features --all-targets --no-run
# The snapwake binary that compile made (the CLI's integration tests run it) serves the
# conformance and page steps: a `cargo build -p snapwake-cli` would compile the shared crate
# and the CLI again for the features of that one package (over a minute on two cores).
SNAPWAKE_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/snapwake"
[[ -x "$SNAPWAKE_BIN" ]] || { echo "the test compile made no $SNAPWAKE_BIN" >&2; exit 1; }
export SNAPWAKE_BIN

step "cargo test, and in the background: the supply chain"
# Every AWS call a function makes in the suites is recorded here, for the IAM step below
# (snapwake::aws_calls; tests/tests/iam.rs).
export SNAPWAKE_AWS_CALLS="$PWD/target/aws-calls"
rm -rf "$SNAPWAKE_AWS_CALLS"
# cargo-deny is built by `cargo install`, which must not take clippy for its compiler.
background deps env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS scripts/check-deps.sh
if cargo nextest --version >/dev/null 2>&1; then
  # The first morning (cli/tests/fleet_serve.rs) answers people within the readiness + 1.5 s
  # while 300 scheduled wakes go out through `serve`, and waits six minutes of wall clock for
  # its minute: it runs beside the rest, on a DynamoDB Local of its own, at the normal
  # priority, and the rest's tests a little behind it (nice 5), so their load does not reach
  # its people's answers (beside six other tests at one priority, two waited 3.2 and 4.3 s).
  # Their DynamoDB Local stays at the normal priority: niced too, it once stalled past the
  # SDK's 8 s while the first morning's wakes went out.
  BG_NICE=0 background first_morning cargo nextest run --workspace --all-features \
    --profile first-morning -E 'binary(fleet_serve)'
  # --no-fail-fast is the profile's: one run reports every failing test; and the first
  # morning's report is shown whatever the rest's.
  rc=0
  nice -n 5 cargo nextest run --workspace --all-features -E 'not binary(fleet_serve)' || rc=$?
  ((rc == 0)) && { nice -n 5 cargo test --workspace --all-features --doc || rc=$?; }
  slowest target/nextest/default/junit.xml
  await first_morning || rc=$?
  ((rc == 0)) || exit "$rc"
else
  cargo test --workspace --all-features --no-fail-fast
fi

step "in the background from here: the My Agents page in headless Chromium, and the clients against snapwake serve"
# Neither measures time, and both wait on their own `snapwake serve` processes far more than
# they compute (docs/clients.md, docs/console.md): they run beside the steps below, niced so
# the rate-limited suites keep the machine.
await clients
await console
BG_NICE=10 background clients_tests scripts/clients-test.sh
BG_NICE=10 background console_tests scripts/console-test.sh

step "the 500-caller storm, the fault soak and the schedule suites again, under AgentKit's account-wide rate limits"
# The simulator limits every action as AgentKit is assumed to (docs/agentkit.md, "Rate
# limits"): one account's limits shared by every caller, 429 with Retry-After above them.
# Not the kill tests (kills::): what they vary is where a process dies, which the rate limits
# do not change, and the consumer's alone is four minutes; of the storms, the largest
# (docs/testing.md, "The test command").
if cargo nextest --version >/dev/null 2>&1; then
  SNAPWAKE_SIM_RATE_LIMITS=agentkit cargo nextest run --workspace --all-features \
    -E '(test(/storm_of_500/) | test(/soak::/) | binary(schedules)) & !test(/^kills::/)'
else
  SNAPWAKE_SIM_RATE_LIMITS=agentkit cargo test -p snapwake-tests --all-features \
    --test resume --test faults --test schedules
fi

step "IAM: every AWS call the suites recorded, against its function's policy in the template"
# --workspace, as the runs above: one package's own feature set would compile the shared crate
# again (a minute on two cores).
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --all-features -E 'binary(iam)' --run-ignored only --no-capture
else
  cargo test --workspace --all-features --test iam -- --ignored --nocapture
fi

step "the supply chain: cargo deny, the functions' bans, rust-version (docs/supply-chain.md)"
await deps

step "infra/: sam-translator and cfn-lint on the template"
await infra

step "conformance: schemathesis against snapwake serve --demo"
scripts/conformance.sh

step "the My Agents page and the clients (started in the background above)"
await console_tests
await clients_tests

summary
