"""The firmware suites that run under the real MicroPython unix port (with the fake machine module).

Everything runs as deployed: the firmware, the fakes and the suites compiled to .mpy. A suite loads all four
drivers, the fakes, the hardware models and its own code at once, so suites get SUITE_HEAP; the firmware as it
runs on a board (one driver) is held to 72 KB (conftest.FIRMWARE_HEAP) by test_fw_sim.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .conftest import FAKES, FIRMWARE, MP_TESTS, mp_env, run_mp, save_figures

SUITES = ["mp_drivers", "mp_heaplock", "mp_app", "mp_board", "mp_link"]
SUITE_HEAP = "256K"


@pytest.fixture(scope="session")
def suites_mpy(mpy_cross: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suites, hardware models and fakes compiled to .mpy."""
    out = tmp_path_factory.mktemp("suites")
    for src in [*MP_TESTS.glob("*.py"), *FAKES.glob("*.py")]:
        subprocess.run([mpy_cross, "-o", str(out / (src.stem + ".mpy")), "-s", src.name, str(src)], check=True)
    return out


def _run_suite(micropython: str, module: str, suites: Path, mpy: Path, heapsize: str = SUITE_HEAP,
               extra_path: list[str] | None = None):
    env = mp_env(*(extra_path or []), suites, mpy)
    return run_mp(micropython, ["-m", "mprun", module], env, heapsize=heapsize)


@pytest.mark.parametrize("module", SUITES)
def test_micropython_suite(micropython: str, module: str, suites_mpy: Path, mpy_build: Path) -> None:
    proc = _run_suite(micropython, module, suites_mpy, mpy_build)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    m = re.search(r"^(\d+) passed, (\d+) failed$", out, re.M)
    assert m, out
    assert proc.returncode == 0 and m.group(2) == "0" and int(m.group(1)) > 0, out


def test_pure_tests_also_pass_under_micropython(micropython: str, suites_mpy: Path, mpy_build: Path) -> None:
    """test_fw_pure's plain-assert tests are written to run on both interpreters."""
    proc = _run_suite(micropython, "test_fw_pure", suites_mpy, mpy_build, extra_path=[str(MP_TESTS.parent)])
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, out
    assert re.search(r"^\d+ passed, 0 failed$", out, re.M), out


def test_runner_exit_code_is_honest(micropython: str, tmp_path, suites_mpy: Path, mpy_build: Path) -> None:
    (tmp_path / "mp_failing.py").write_text("def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n")
    proc = _run_suite(micropython, "mp_failing", suites_mpy, mpy_build, extra_path=[str(tmp_path)])
    out = proc.stdout.decode()
    assert proc.returncode == 1, out
    assert "1 passed, 1 failed" in out
    (tmp_path / "mp_empty.py").write_text("X = 1\n")
    assert _run_suite(micropython, "mp_empty", suites_mpy, mpy_build, extra_path=[str(tmp_path)]).returncode == 1


def test_scan_cost(micropython: str) -> None:
    """Per-scan cost of each driver on this machine (with the Python fakes behind it), printed for the
    record. The 200 Hz loop has 5000 us a scan; the recommended build must use a small part of it even here."""
    import json

    env = mp_env(FAKES, MP_TESTS, FIRMWARE)
    proc = run_mp(micropython, [str(MP_TESTS / "mp_bench.py")], env, heapsize="1M")
    assert proc.returncode == 0, proc.stderr.decode()
    rows = json.loads(proc.stdout)
    save_figures("firmware-scan-cost.json", rows)
    print("\nscan cost (us per scan, unix port, fake hardware): "
          + ", ".join(f"{r['driver']} {r['idle_us']}/{r['busy_us']}" for r in rows))
    hc165 = next(r for r in rows if r["driver"] == "hc165")
    assert hc165["busy_us"] < 500
