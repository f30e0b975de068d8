"""The simulation's private Mosquitto (tests, demos, benchmarks) on a port of its own."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import REQUIRE_ALL
from touchmove.sim import local_broker


def need_mosquitto() -> None:
    if not local_broker.LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1): run `make system-deps`")
        pytest.skip("mosquitto is not installed: `make system-deps` (apt-get install mosquitto)")


def test_a_local_broker_whose_free_port_was_taken_chooses_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel tests pick free ports too: a port taken between the choice and Mosquitto's start (here by a
    listener of this test's own) is chosen again, and start() returns once its own Mosquitto listens (before: a
    connection accepted by the other listener counted as the broker up, or Mosquitto's exit failed the test)."""
    need_mosquitto()
    real_free_port = local_broker.free_port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        chosen = iter([busy])
        monkeypatch.setattr(local_broker, "free_port", lambda: next(chosen, None) or real_free_port())
        with local_broker.LocalBroker() as broker:
            assert broker.port != busy
            assert broker._proc is not None and broker._proc.poll() is None
            assert local_broker.listens(broker._proc.pid, broker.port)
            assert not local_broker.listens(broker._proc.pid, busy)


def test_a_port_given_and_taken_is_an_error_naming_it() -> None:
    need_mosquitto()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with pytest.raises(local_broker.PortTaken, match=f"port {busy} is taken"):
            local_broker.LocalBroker(busy).start()
