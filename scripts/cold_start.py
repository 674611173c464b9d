#!/usr/bin/env python3
"""Cold start of each function binary (docs/architecture.md, "Quality bars": exec -> first Runtime API `next` <= 50 ms).

A fake Lambda Runtime API on loopback records when the first
`GET /2018-06-01/runtime/invocation/next` arrives; each binary is started with the variables
Lambda sets plus the ones snapwake's configuration needs, timed from just before exec to that
request, then killed. Nothing is invoked: the `next` request is held open until the kill.

Usage: cold_start.py [--runs N] BINARY... ; prints a Markdown section (stdout).
"""

import argparse
import http.server
import os
import statistics
import subprocess
import threading
import time

NEXT = "/2018-06-01/runtime/invocation/next"
BUDGET_MS = 50.0


class Runtime(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.arrived = threading.Event()
        self.arrived_at = None
        self.release = threading.Event()
        self.paths = []

    def reset(self):
        self.arrived.clear()
        self.arrived_at = None
        self.release.clear()
        self.paths = []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        now = time.perf_counter()
        server = self.server
        server.paths.append(self.path)
        if self.path == NEXT and not server.arrived.is_set():
            server.arrived_at = now
            server.arrived.set()
        # Hold the long poll open, as Lambda does between invocations.
        server.release.wait(30)

    def do_POST(self):
        self.server.paths.append("POST " + self.path)
        self.send_response(202)
        self.end_headers()

    def log_message(self, *args):
        pass


def environment(port, name):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_FUNCTION_VERSION": "1",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/01/01/[1]cold",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "SNAPWAKE_TABLE": "snapwake-cold-start",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "dummy",
        "AWS_SECRET_ACCESS_KEY": "dummy",
        "VOLCENGINE_ACCESS_KEY": "dummy",
        "VOLCENGINE_SECRET_KEY": "dummy",
        # Nothing is called before the first `next`; a closed port if something were.
        "AGENTKIT_ENDPOINT": "http://127.0.0.1:9",
    }
    return env


def measure(server, binary, runs):
    name = os.path.basename(binary)
    env = environment(server.server_address[1], name)
    samples, failure = [], None
    for _ in range(runs):
        server.reset()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        arrived = server.arrived.wait(10)
        server.release.set()
        proc.kill()
        _, err = proc.communicate()
        if not arrived:
            failure = err.decode(errors="replace").strip().splitlines()[-3:]
            break
        samples.append((server.arrived_at - started) * 1000.0)
    return samples, failure


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    server = Runtime()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("## Cold start: exec → first Runtime API `next`\n")
    print(
        "Each release binary started against a fake Lambda Runtime API on loopback "
        f"(`scripts/cold_start.py`), {args.runs} runs each, time from just before exec to the "
        "arrival of the first `GET /2018-06-01/runtime/invocation/next`. Environment: the "
        "`AWS_LAMBDA_*` variables Lambda sets (128 MB), `SNAPWAKE_TABLE`, `AWS_REGION`, dummy "
        "AWS and Volcengine credentials, `AGENTKIT_ENDPOINT` on a closed loopback port.\n"
    )
    print("| binary | median | min | max | budget |\n|---|---|---|---|---|")
    failures = []
    for binary in args.binaries:
        samples, failure = measure(server, binary, args.runs)
        name = os.path.basename(binary)
        if failure is not None:
            failures.append((name, failure))
            print(f"| {name} | did not reach `next` | | | ≤ {BUDGET_MS:.0f} ms |")
            continue
        med = statistics.median(samples)
        verdict = "met" if med <= BUDGET_MS else "MISSED"
        print(
            f"| {name} | {med:.1f} ms | {min(samples):.1f} ms | {max(samples):.1f} ms "
            f"| ≤ {BUDGET_MS:.0f} ms ({verdict}) |"
        )
    print()
    for name, lines in failures:
        print(f"{name} stopped before `next`: `{' / '.join(lines)}`\n")
    server.shutdown()


if __name__ == "__main__":
    main()
