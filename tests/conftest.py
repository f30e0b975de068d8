"""Fixtures every test folder shares: a private Mosquitto for each test that asks for one.

The end-to-end tests (tests/e2e) replace it with their own broker, which they stop and restart on one port to
make outages.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from touchmove.broadcast.local_broker import LocalBroker

REQUIRE_ALL = os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1"


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    """A Mosquitto of the test's own on a free port (never the system broker on 1883)."""
    if not LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("mosquitto is not installed: `make system-deps` (apt-get install mosquitto)")
    with LocalBroker() as running:
        yield running
