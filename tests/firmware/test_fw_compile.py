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


def test_freeze_manifest_names_the_package() -> None:
    text = (FIRMWARE / "manifest.py").read_text()
    assert 'include("$(PORT_DIR)/boards/manifest.py")' in text and 'package("touchmove_fw")' in text
    assert (FIRMWARE / "touchmove_fw" / "__init__.py").exists()


@pytest.mark.parametrize(("board", "march"), [("pico", "armv6m"), ("pico_w", "armv6m"),
                                              ("esp32s3_devkitc", "xtensawin")])
def test_make_flash_installs_mpy_for_the_board(board: str, march: str) -> None:
    """`make flash` compiles with the board's architecture and copies .mpy files, not sources."""
    root = FIRMWARE.parent
    proc = subprocess.run(["make", "-n", "flash", f"BOARD={board}", "PORT=/dev/null"], cwd=root,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"-march={march}" in proc.stdout
    assert f"fs cp -r build/mpy-{board}/touchmove_fw :" in proc.stdout
    assert "fs cp -r firmware/touchmove_fw" not in proc.stdout


def _plain_int_constants(path) -> list[str]:
    """Module-level NAME = <int literal> assignments (not wrapped in const())."""
    import ast

    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found.append(f"{path.name}: {node.targets[0].id}")
    return found


def test_int_constants_are_const() -> None:
    """Module-level integer constants are const(): the compiler folds them into the bytecode (a private _NAME
    takes no RAM at all) instead of a global lookup at each use, in the scan loop too."""
    plain = [c for m in MODULES for c in _plain_int_constants(FIRMWARE / m)]
    assert plain == [], plain
