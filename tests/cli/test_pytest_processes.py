"""The suite's own pytest processes (tests/conftest.py): a failure whose text is not UTF-8 (a lone surrogate) is
reported under pytest-xdist and the run goes on; a suite started with SIGINT ignored still stops its children with
Ctrl-C."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import REPO
from tests.conftest import utf8_writable

FAILING = '''
def test_bytes_read_as_text():
    text = b"1. e4 \\xff".decode("utf-8", "surrogateescape")
    assert text == "1. e4", text


def test_after():
    pass
'''


def test_utf8_writable_escapes_lone_surrogates_only() -> None:
    assert utf8_writable("é ♞ ok") == "é ♞ ok"
    assert utf8_writable(b"pgn \xff".decode("utf-8", "surrogateescape")) == "pgn \\udcff"


def test_a_failure_with_a_lone_surrogate_under_xdist(tmp_path: Path) -> None:
    """Before: the worker could not send the report (execnet: "strings must be utf-8 encodable"), INTERNALERROR,
    and the tests after it never ran."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    (tmp_path / "test_bytes.py").write_text(FAILING)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1",
                           "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "INTERNALERROR" not in done.stdout, done.stdout
    assert "1 failed, 1 passed" in done.stdout and "\\udcff" in done.stdout, done.stdout
    assert done.returncode == 1


CHILD_SIGINT = '''
import signal, subprocess, sys


def test_a_child_takes_ctrl_c():
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip() == "True", out
'''


def test_a_suite_started_with_sigint_ignored_gives_its_children_ctrl_c(tmp_path: Path) -> None:
    """A background job of a non-interactive shell (``make test &``) starts with SIGINT ignored, and children
    inherit that: ``touchmove replay`` exited 0 instead of 130 on SIGINT, the lichess stand-in never stopped."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_configure  # noqa: F401\n")
    (tmp_path / "test_child.py").write_text(CHILD_SIGINT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    for workers in (["-p", "no:xdist"], ["-n", "1"]):
        done = subprocess.run(["bash", "-c", 'trap "" INT; exec "$@"', "bash", sys.executable, "-m", "pytest", "-q",
                               "-p", "no:cacheprovider", *workers, "--rootdir", str(tmp_path), str(tmp_path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout
