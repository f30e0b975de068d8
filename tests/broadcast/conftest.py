"""Fixtures of the broadcast tests: a private Mosquitto for each test that asks for one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broadcast.broadcast_helpers import REQUIRE_ALL
from touchmove.broadcast.local_broker import LocalBroker


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    """A Mosquitto of the test's own on a free port (never the system broker on 1883)."""
    if not LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("mosquitto is not installed: `make system-deps` (apt-get install mosquitto)")
    with LocalBroker() as running:
        yield running
