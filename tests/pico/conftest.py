"""Fixtures of the emulated-Pico tests: the firmware installed once a session, a bridge rig per test.

Skipped with a message where ``../shared/mcu`` (the MicroPython image and the boot ROM), node or rp2040js are
absent; under TOUCHMOVE_REQUIRE_ALL=1 (CI) they fail instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_ALL
from tests.pico.emulator import FlashCache, missing
from tests.pico.rig import BridgeRig


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.pico)


@pytest.fixture(scope="session")
def flashes(tmp_path_factory: pytest.TempPathFactory) -> FlashCache:
    """Flash images of the emulated Pico: the firmware (``make mpy BOARD=pico``) and board set-ups on it."""
    why = missing()
    if why is not None:
        if REQUIRE_ALL:
            pytest.fail(f"the emulated Pico cannot run: {why} (TOUCHMOVE_REQUIRE_ALL=1)")
        pytest.skip(f"the emulated Pico cannot run: {why}")
    return FlashCache(tmp_path_factory.mktemp("pico-flash"))


@pytest.fixture
def rig(tmp_path: Path, flashes: FlashCache) -> Iterator[BridgeRig]:
    """A private Mosquitto and the real ``touchmove run`` for emulated boards on ``tmp/ttyPICO*``."""
    r = BridgeRig(tmp_path).start()
    yield r
    r.stop()
