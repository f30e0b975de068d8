"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import Broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A private Mosquitto on a free port, stopped after the test."""
    b = Broker(tmp_path)
    b.start()
    yield b
    b.stop()
