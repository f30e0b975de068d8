"""Compile gate: every firmware module compiles with mpy-cross for the RP2040's Cortex-M0+ (armv6m), and for
the ESP32 (xtensawin)."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import FIRMWARE

MODULES = sorted(p.relative_to(FIRMWARE) for p in FIRMWARE.rglob("*.py"))


def test_every_module_is_listed() -> None:
    names = {str(p) for p in MODULES}
    assert "main.py" in names and "touchmove_fw/scan.py" in names and len(names) >= 18


@pytest.mark.parametrize("march", ["armv6m", "xtensawin"])
@pytest.mark.parametrize("module", MODULES, ids=str)
def test_compiles_for_the_boards(mpy_cross: str, module, march: str, tmp_path) -> None:
    out = tmp_path / "out.mpy"
    proc = subprocess.run([mpy_cross, f"-march={march}", "-o", str(out), str(module)], cwd=FIRMWARE,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0
