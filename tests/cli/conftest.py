"""The way to run ``touchmove`` as a process, for the command-line tests (their broker: tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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
