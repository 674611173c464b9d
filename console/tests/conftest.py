"""Fixtures of the My Agents browser tests: a fresh `snapwake serve --demo` per test (its own
in-memory world and simulator, so tests never see each other's changes), a Chromium or Chrome
driven by Playwright, and a page that fails its test on any JavaScript error or console error.

scripts/console-test.sh sets SNAPWAKE_BIN, CHROMIUM (the browser scripts/find-chromium.sh
chose) and CONSOLE_SCREENSHOTS; the defaults suit a run from the repository root after
`cargo build -p snapwake-cli`: CHROMIUM, else CHROME_PATH, else /usr/bin/chromium when it
exists, else Playwright's own Chromium (`python -m playwright install chromium`).
"""

import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import sync_playwright

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("SNAPWAKE_BIN", str(ROOT / "target/debug/snapwake"))
CHROMIUM = (os.environ.get("CHROMIUM") or os.environ.get("CHROME_PATH")
            or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None))
SHOTS = pathlib.Path(os.environ.get("CONSOLE_SCREENSHOTS", ROOT / "target/console-screenshots"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DATA_HELPER = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516"


def die_with_parent():
    """In the child: end with the test run, even one killed before its fixtures stop it."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM


# Linux only (macOS has no PR_SET_PDEATHSIG): elsewhere only the fixtures stop the servers.
PREEXEC = die_with_parent if sys.platform.startswith("linux") else None


class Server:
    """`snapwake serve --demo` on a free port; `sim` is its embedded simulator's address.

    `slow_wake` makes a session take 3 s to be Ready, so the page must follow 202s (its
    requests are short: it never says `Prefer: wait`). `env`: more of the server's settings
    (e.g. `SNAPWAKE_PRICES`).
    """

    def __init__(self, slow_wake=False, env=None):
        # Port 0: the server binds a free port itself and says which (a port picked here and
        # bound there later could be taken in between: "Address already in use").
        settings = env or {}
        env = {k: v for k, v in os.environ.items() if k not in ("AGENTKIT_ENDPOINT", "SNAPWAKE_TABLE")}
        env["RUST_LOG"] = "warn"
        env.update(settings)
        ready_ms = "300"
        if slow_wake:
            env.update({"SNAPWAKE_WAIT_S": "2", "AGENTKIT_TIMEOUT_MS": "1000"})
            ready_ms = "3000"
        self.log = tempfile.NamedTemporaryFile(prefix="snapwake-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--demo", "--port", "0", "--sweep-every", "0s",
             "--session-ready-delay-ms", ready_ms, "--snapshot-ready-delay-ms", "300"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, preexec_fn=PREEXEC,
        )
        deadline = time.monotonic() + 20
        while True:
            text = pathlib.Path(self.log.name).read_text(errors="replace")
            m = re.search(r"simulator at (http://127\.0\.0\.1:\d+)", text)
            served = re.search(r"snapwake serving on http://127\.0\.0\.1:(\d+)", text)
            if m and served:
                self.sim = m.group(1)
                self.port = int(served.group(1))
                self.url = f"http://127.0.0.1:{self.port}"
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"snapwake serve did not start:\n{text}")
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)

    def api(self, method, path, user="alice", admin=False, body=None, headers=None):
        """One API request as `user`: (status, headers, JSON body or None)."""
        h = {"X-Snapwake-User": user, **(headers or {})}
        if admin:
            h["X-Snapwake-Admin"] = "1"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw = r.read()
                return r.status, dict(r.headers), json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, dict(e.headers), json.loads(raw) if raw else None

    def counters(self):
        with urllib.request.urlopen(f"{self.sim}/_sim/counters", timeout=10) as r:
            return json.load(r)

    def received(self, action):
        return self.counters()["actions"].get(action, {}).get("received", 0)

    def sim_post(self, path, body):
        req = urllib.request.Request(self.sim + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)


@pytest.fixture
def serve():
    """A factory: `serve(slow_wake=True)`, `serve(env={...})`; every server it starts is
    stopped after the test."""
    started = []

    def start(**kwargs):
        s = Server(**kwargs)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def server(serve):
    return serve()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Watched:
    """A page with its browser log and the API requests it sent."""

    def __init__(self, page):
        self.page = page
        self.errors = []
        self.requests = []
        self.allowed = []
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("console", self._console)
        page.on("request", self._request)

    def _console(self, msg):
        if msg.type in ("error", "warning") and not any(re.search(a, msg.text) for a in self.allowed):
            self.errors.append(f"console.{msg.type}: {msg.text}")

    def _request(self, req):
        if "/v1/" in req.url:
            self.requests.append({"method": req.method, "url": req.url, "headers": req.headers,
                                  "body": req.post_data})

    def sent(self, method, fragment):
        return [r for r in self.requests if r["method"] == method and fragment in r["url"]]

    def shot(self, name):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def watched(browser):
    """A fresh browser context at desktop size; fails the test on any browser error."""
    opened = []

    def open_page(width=1280, height=900, timezone_id="UTC", color_scheme="light"):
        ctx = browser.new_context(viewport={"width": width, "height": height}, locale="en-GB",
                                  timezone_id=timezone_id, color_scheme=color_scheme)
        w = Watched(ctx.new_page())
        w.page.set_default_timeout(20_000)
        opened.append((ctx, w))
        return w

    yield open_page
    errors = [e for _, w in opened for e in w.errors]
    for ctx, _ in opened:
        ctx.close()
    assert not errors, "browser log:\n" + "\n".join(errors)
