#!/usr/bin/env python3
"""The wake, list and cold-start figures of this checkout against another commit, in one sitting.

Figures from different days on a shared 2-core machine differ by more than most changes do
(the same commit's 1000 distinct wakes took 3.6 s one day and 6.8 s the next), so "did this
change make it slower" is answered by running both sides here, interleaved on one DynamoDB
Local that an unmeasured run warmed first, and comparing medians. docs/architecture.md, "Quality bars", says when
to use it.

The base commit is checked out in a worktree under target/bench-against/; its benches and its
release resume and list binaries are built into their own target directory there (minutes,
the first time). Both sides' release binaries are timed by this checkout's `cold_answer` bench,
which takes the binaries' directory.

Usage: bench_against.py BASE [--runs N] ; prints a Markdown section (stdout), progress on stderr.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WORK = os.path.join(ROOT, "target", "bench-against")


def free_port():
    """A port nothing listens on now (DynamoDB Local binds every interface)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return str(s.getsockname()[1])


# Its own port, so a DynamoDB Local the tests left running (and its tables) is not measured:
# BENCH_DYNAMODB_LOCAL_PORT (bench.sh passes the one it used), else a free one.
PORT = os.environ.get("BENCH_DYNAMODB_LOCAL_PORT") or free_port()
BENCHES = ("wake", "list")
# Timed by this checkout's cold_answer bench, whichever side's binaries it starts.
RELEASE = ("resume", "list")
COLD = "Cold start: exec → first answered request"

# (bench, section heading prefix, row label, column, unit): the figures compared. Columns count
# the table's cells from 0 (the label).
FIGURES = [
    ("wake", "First wake", "caller latency p99", 1, "ms", "wake storm p99, first wake"),
    ("wake", "The next day", "caller latency p99", 1, "ms", "wake storm p99, the next day"),
    ("wake", "Wake throughput", "wall time", 1, "ms", "1000 distinct wakes, wall time"),
    ("list", "List one owner", "latency median", 2, "ms", "list one owner by the index, median"),
    ("list", "List one owner", "latency median", 1, "ms", "list one owner by a scan, median"),
    ("list", "The retention sweep", "wall time", 1, "ms", "retention sweep, first pass"),
    ("cold_answer", COLD, "resume, wake an asleep agent", 6, "ms", "exec → first answered resume"),
    ("cold_answer", COLD, "resume, wake an asleep agent", 1, "ms", "resume: init, exec → first `next`"),
    ("cold_answer", COLD, "list, list alice's agents", 6, "ms", "exec → first answered list"),
    ("cold_answer", COLD, "list, list alice's agents", 1, "ms", "list: init, exec → first `next`"),
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def build(checkout, target_dir, benches):
    """Build `benches` and the release binaries of `checkout`; return ({bench: executable},
    the release binaries' directory)."""
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir, CARGO_INCREMENTAL="0")
    args = ["cargo", "bench", "-q", "-p", "snapwake-tests", "--no-run", "--message-format=json"]
    for b in benches:
        args += ["--bench", b]
    out = run(args, cwd=checkout, env=env, stdout=subprocess.PIPE).stdout
    found = {}
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and "bench" in msg["target"]["kind"]:
            found[msg["target"]["name"]] = msg["executable"]
    missing = [b for b in benches if b not in found]
    if missing:
        sys.exit(f"cargo built no executable for {missing}")
    release = ["cargo", "build", "-q", "--release"]
    for f in RELEASE:
        release += ["-p", f"snapwake-{f}"]
    run(release, cwd=checkout, env=env)
    return found, os.path.join(target_dir, "release")


def fresh_dynamodb():
    env = dict(os.environ, DYNAMODB_LOCAL_PORT=PORT)
    run([os.path.join(ROOT, "scripts", "stop-dynamodb-local.sh")], env=env)
    out = run([os.path.join(ROOT, "scripts", "start-dynamodb-local.sh")], env=env,
              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    exported = dict(re.findall(r"(\w+)=(\S+)", out))
    return dict(os.environ, **exported)


def stop_dynamodb():
    run([os.path.join(ROOT, "scripts", "stop-dynamodb-local.sh")],
        env=dict(os.environ, DYNAMODB_LOCAL_PORT=PORT))


def sections(markdown):
    """{heading: [rows]} for every ## and ### heading; a row is its list of cells."""
    out, current = {}, None
    for line in markdown.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            out[current] = []
        elif current and line.startswith("|"):
            out[current].append([c.strip() for c in line.strip().strip("|").split("|")])
    return out


def figure(parsed, heading, label, col):
    for name, rows in parsed.items():
        if name.startswith(heading):
            for row in rows:
                if row[0] == label:
                    return float(re.match(r"[\d.]+", row[col]).group(0))
    raise KeyError(f"{heading!r} / {label!r} not in the bench output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the commit to compare against")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    base = run(["git", "rev-parse", "--short", args.base], cwd=ROOT, stdout=subprocess.PIPE).stdout.strip()
    head = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE).stdout.strip()
    # BENCHMARKS.md is what bench.sh is rewriting: not a change to the code measured.
    dirty = run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                 ":!BENCHMARKS.md"], cwd=ROOT, stdout=subprocess.PIPE).stdout.strip()
    checkout = os.path.join(WORK, base)
    if not os.path.isdir(checkout):
        log(f"checking out {base} in {checkout}")
        run(["git", "worktree", "add", "--detach", "-f", checkout, base], cwd=ROOT,
            stdout=subprocess.DEVNULL)
    log(f"building the benches and release binaries of {base} (the first time takes minutes)...")
    exes, binaries = {}, {}
    exes["base"], binaries["base"] = build(checkout, os.path.join(WORK, "target"), BENCHES)
    log("building the benches and release binaries of this checkout...")
    exes["head"], binaries["head"] = build(
        ROOT, os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
        BENCHES + ("cold_answer",))
    cwd = {"base": os.path.join(checkout, "tests"), "head": os.path.join(ROOT, "tests")}

    values = {side: {f[5]: [] for f in FIGURES} for side in exes}
    try:
        # One server for the sitting, warmed by an unmeasured run: a fresh DynamoDB Local's JVM
        # is still compiling for its first few thousand requests, and the base's benches may
        # warm it less than this checkout's do.
        env = fresh_dynamodb()
        log("warming DynamoDB Local up (one unmeasured wake bench)")
        run([exes["head"]["wake"], "--bench"], cwd=cwd["head"], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(args.runs):
            # Alternate which side goes first, so a drift over the sitting hits both alike.
            order = ("base", "head") if i % 2 == 0 else ("head", "base")
            for side in order:
                for bench in BENCHES + ("cold_answer",):
                    log(f"run {i + 1}/{args.runs}: {side} {bench}")
                    if bench == "cold_answer":
                        exe, where = exes["head"][bench], cwd["head"]
                        bench_env = dict(env, SNAPWAKE_BENCH_BINARIES=binaries[side])
                    else:
                        exe, where, bench_env = exes[side][bench], cwd[side], env
                    out = run([exe, "--bench"], cwd=where, env=bench_env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
                    parsed = sections(out)
                    for b, heading, label, col, _, name in FIGURES:
                        if b == bench:
                            values[side][name].append(figure(parsed, heading, label, col))
    finally:
        stop_dynamodb()

    print(f"## Against {base}: wake, list and cold start, interleaved in one sitting\n")
    print(f"`scripts/bench_against.py {args.base} --runs {args.runs}`: {args.runs} runs of each side's "
          "`wake` and `list` benches, and this checkout's `cold_answer` bench on each side's release "
          "binaries (median of its 5 starts), alternating which side goes first, on one DynamoDB "
          f"Local warmed by an unmeasured wake bench. Base {base}; this checkout {head}{' with uncommitted changes' if dirty else ''}. "
          "Medians, with every run in brackets.\n")
    print(f"| figure | {base} | {head} | change |")
    print("|---|---|---|---|")
    for *_, unit, name in FIGURES:
        b, h = statistics.median(values["base"][name]), statistics.median(values["head"][name])
        each = lambda vs: ", ".join(f"{v:.0f}" if v >= 100 else f"{v:.1f}" for v in vs)
        print(f"| {name} | {b:.1f} {unit} ({each(values['base'][name])}) "
              f"| {h:.1f} {unit} ({each(values['head'][name])}) | {100 * (h - b) / b:+.0f}% |")
    print()


if __name__ == "__main__":
    main()
