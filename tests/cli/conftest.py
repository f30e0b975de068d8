"""Fixtures of the command-line tests: a private Mosquitto, and the way to run ``touchmove`` as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from touchmove.broadcast.local_broker import LocalBroker

REQUIRE_ALL = os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    """A Mosquitto of the test's own on a free port (never the system broker on 1883)."""
    if not LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("mosquitto is not installed: `make system-deps` (apt-get install mosquitto)")
    with LocalBroker() as running:
        yield running


def touchmove(*args: str, cwd: Path | None = None, input: str | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``touchmove ARGS`` as its own process; return the finished process (output as text)."""
    return subprocess.run([sys.executable, "-m", "touchmove.cli", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout)


def one_line_error(stderr: str) -> str:
    """Assert that ``stderr`` is exactly one line and no traceback; return that line."""
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]
