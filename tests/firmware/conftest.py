"""Shared set-up for the firmware tests: paths, the MicroPython binaries and how to run them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
HERE = Path(__file__).resolve().parent
FAKES = HERE / "fakes"
MP_TESTS = HERE / "mp"
ARTIFACTS = ROOT / "artifacts"  # measured figures land here (git-ignored)
# The heap the firmware itself runs in under the unix port (64-bit: objects take about twice their RP2040 size,
# so this is far less than the Pico's ~190 KB). Measured 2026-12-02 (.mpy, the sim board): it starts in 62 KB
# (64 KB on a pty, with termios) and serves every command (diag is the largest) from 66 KB (68 KB on a pty);
# 72 KB leaves a margin for a busy heap.
FIRMWARE_HEAP = "72K"


def save_figures(name: str, data: object) -> None:
    import json

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_text(json.dumps(data, indent=2) + "\n")

# The pure firmware modules (squares, debounce, protocol, ...) import under CPython too.
if str(FIRMWARE) not in sys.path:
    sys.path.insert(0, str(FIRMWARE))


def _tool(name: str) -> str | None:
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def _require(name: str) -> str:
    path = _tool(name)
    if path is None:
        msg = f"{name} not found (pip install -e '.[test]' provides it)"
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(msg + "; TOUCHMOVE_REQUIRE_ALL=1 forbids skipping")
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def micropython() -> str:
    return _require("micropython")


@pytest.fixture(scope="session")
def mpy_cross() -> str:
    return _require("mpy-cross")


def mp_env(*paths: Path | str, **extra: str) -> dict[str, str]:
    """The environment for a micropython run with these folders (then the frozen stdlib) on its path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOUCHMOVE_")}
    env["MICROPYPATH"] = ":".join([*(str(p) for p in paths), ".frozen"])
    env.update(extra)
    return env


def run_mp(
    micropython: str, args: list[str], env: dict[str, str], heapsize: str | None = None, timeout: float = 120,
    stdin: bytes | None = b"",
) -> subprocess.CompletedProcess[bytes]:
    cmd = [micropython]
    if heapsize:
        cmd += ["-X", f"heapsize={heapsize}"]
    return subprocess.run(cmd + args, env=env, input=stdin, capture_output=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def mpy_build(mpy_cross: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The firmware compiled to .mpy (as deployed), with main.py beside the package."""
    out = tmp_path_factory.mktemp("mpy")
    for src in FIRMWARE.rglob("*.py"):
        rel = src.relative_to(FIRMWARE)
        if rel == Path("main.py"):
            shutil.copy(src, out / "main.py")
            continue
        dst = (out / rel).with_suffix(".mpy")
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([mpy_cross, "-o", str(dst), "-s", str(rel), str(src)], check=True, cwd=FIRMWARE)
    return out
