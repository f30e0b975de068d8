"""The NATS cluster the tests start: a port found free but taken before its node binds it costs a new choice of
ports, not a failed test (seen in a fresh-clone run: a node exited at once)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.e2e.helpers import require_binary
from touchmove.sim import natscluster
from touchmove.sim.natscluster import NatsCluster


@pytest.fixture
def taken() -> Iterator[int]:
    """A port some other program listens on."""
    require_binary("nats-server", "/usr/sbin/nats-server")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_a_node_whose_port_is_taken_is_started_again_on_new_ports(taken: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[int] = []
    real = natscluster.free_port

    def first_taken() -> int:
        chosen.append(taken if not chosen else real())
        return chosen[-1]

    monkeypatch.setattr(natscluster, "free_port", first_taken)
    with NatsCluster(1) as cluster:
        node = cluster.nodes[0]
        assert taken not in (node.client_port, node.cluster_port, node.mqtt_port, node.monitor_port)
        assert node.pid is not None
    assert len(chosen) == 8     # four ports for the first try, four for the second


def test_a_node_that_cannot_start_is_an_error_after_the_tries(taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(natscluster, "free_port", lambda: taken)
    with pytest.raises(RuntimeError, match="exited"):
        NatsCluster(1).start(timeout=20)


def test_a_node_that_does_not_serve_mqtt_in_time_is_started_again_on_new_ports(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One node of one cluster never answered MQTT in 120 s in a loaded fresh-clone run; the next start did."""
    require_binary("nats-server", "/usr/sbin/nats-server")
    real = natscluster.mqtt_round_trip
    first_ports: list[int] = []

    def closed_on_the_first_ports(port: int, user: tuple[str, str] | None = None) -> str:
        if not first_ports:
            first_ports.append(port)
        return "connection closed" if port == first_ports[0] else real(port, user)

    monkeypatch.setattr(natscluster, "mqtt_round_trip", closed_on_the_first_ports)
    cluster = NatsCluster(1)
    try:
        cluster.start(timeout=30)      # the first start waits this long in vain
        assert cluster.nodes[0].mqtt_port != first_ports[0]
        assert real(cluster.nodes[0].mqtt_port, cluster.probe_user) == ""
    finally:
        cluster.stop()


def test_a_node_never_serving_mqtt_is_an_error_with_the_nodes_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    require_binary("nats-server", "/usr/sbin/nats-server")
    monkeypatch.setattr(natscluster, "mqtt_round_trip", lambda port, user=None: "connection closed")
    with pytest.raises(RuntimeError, match="MQTT not ready within 2 s") as failed:
        NatsCluster(1).start(timeout=2)
    assert "--- n1" in str(failed.value)
