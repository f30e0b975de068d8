"""The readiness probe of the private NATS cluster (and of the cluster bench and demo) works in a process that
holds many files. The cluster bench at 1,000 boards keeps a pseudo-terminal a board open; paho's own network
loop waits in ``select()``, which cannot watch a descriptor numbered 1024 or above, so every probe of a
restarted node said "no CONNACK" for 300 s while the node served (measured 2026-12-03: a probe from another
process answered in 0.2-0.7 s). That was the "killed node that did not rejoin at 1,000 boards"."""

from __future__ import annotations

import os
import resource

from tests.e2e.helpers import Broker
from touchmove.sim.natscluster import mqtt_round_trip

#: enough open files that the probe's socket is numbered above select()'s limit of 1024
HELD = 1100


def test_the_probe_answers_with_more_than_1024_files_open(broker: Broker) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard >= HELD + 100, f"the hard limit on open files ({hard}) is below what the 1,000-board bench needs"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HELD + 100), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD)]
    try:
        assert max(held) >= 1024
        assert mqtt_round_trip(broker.port) == ""
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_probe_says_what_failed(broker: Broker) -> None:
    assert mqtt_round_trip(broker.port) == ""
    broker.stop()
    assert mqtt_round_trip(broker.port).startswith("connect:")
