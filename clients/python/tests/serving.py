"""The real thing: `snapwake serve --demo` (in-memory table, the embedded AgentKit simulator
seeded with demo agents), started from the binary the Rust build made ($SNAPWAKE_BIN, else
target/debug/snapwake). conftest.py gives each test module its own."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[3]

#: alice's codex agent "Data helper", asleep in the demo, with a Ready snapshot.
DATA_HELPER = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141516"
#: alice's temporary hermes agent, awake in the demo.
SCRATCH_HERMES = "studio-alice-0d5e1f0a0b0c0d0e0f10111213141518"


def die_with_parent() -> None:
    """In the server's process: stop when the tests' process dies, whatever killed it."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM


# Linux only (macOS has no PR_SET_PDEATHSIG): elsewhere only the fixtures stop the servers.
PREEXEC = die_with_parent if sys.platform.startswith("linux") else None


@dataclass
class Serve:
    url: str
    #: The embedded simulator's address (its `/_sim/...` control routes).
    sim: str

    def counters(self) -> dict[str, Any]:
        return httpx.get(f"{self.sim}/_sim/counters", timeout=10).json()

    def resumes(self) -> int:
        """ResumeSessionFromSnapshot calls AgentKit received, of every agent, so far."""
        return self.received("ResumeSessionFromSnapshot")

    def received(self, action: str) -> int:
        return int(self.counters()["actions"].get(action, {}).get("received", 0))

    def fault(self, fault: dict[str, Any]) -> None:
        httpx.post(f"{self.sim}/_sim/faults", json=fault, timeout=10).raise_for_status()


def serving(*args: str) -> Iterator[Serve]:
    binary = os.environ.get("SNAPWAKE_BIN") or str(ROOT / "target" / "debug" / "snapwake")
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTKIT_ENDPOINT", "SNAPWAKE_TABLE")}
    process = subprocess.Popen(
        [binary, "serve", "--demo", "--port", "0", "--sweep-every", "0s", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
        preexec_fn=PREEXEC,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        url = re.search(r"serving on (http://127\.0\.0\.1:\d+)", banner)
        sim = re.search(r"simulator at (http://127\.0\.0\.1:\d+)", banner)
        assert url and sim, f"snapwake serve said: {banner!r}"
        yield Serve(url.group(1), sim.group(1))
    finally:
        process.terminate()
        process.wait(timeout=10)
