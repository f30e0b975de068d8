"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import Broker, require_binary
from touchmove.sim.natscluster import NatsCluster


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A private Mosquitto on a free port, stopped after the test."""
    b = Broker(tmp_path)
    b.start()
    yield b
    b.stop()


@pytest.fixture
def cluster() -> Iterator[NatsCluster]:
    """Three NATS servers clustered, each with its MQTT listener on a free port, stopped after the test."""
    require_binary("nats-server", "/usr/sbin/nats-server")
    with NatsCluster(3) as running:
        yield running
