"""Fail-over in seconds on a real 3-node NATS cluster: the bridge's MQTT link publishes through node A, the
broadcaster's consumer reads through node B; a node is killed (SIGKILL) and the time until events flow again
is measured against a bound; the killed node is restarted and must serve MQTT again.

Which node dies matters on NATS: every QoS 1 publish waits for the leader of the ``$MQTT_msgs`` stream and
every CONNECT reads ``$MQTT_sess``. Killing a node that leads neither (and carries a connection) must cost
under 2 s; killing their leader costs JetStream's election on top (NATS 2.9's Raft waits 4-9 s for a silent
leader), hence the larger bound there (the issue's 2 s is not met for that node). Commands need a new
JetStream consumer, made by the meta leader, which may be any node: their bound is the election's. Before
these fixes the same kill took 20.8 s (10 s CONNECT timeouts, connections dropped on a refused subscription).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.helpers import require_binary
from touchmove import wire
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.consumer import MqttLink as ConsumerLink
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.brokers import parse_urls
from touchmove.config import MqttConfig
from touchmove.mqtt_bridge import MqttLink
from touchmove.natscluster import NatsCluster

BASE = "hall-f"
#: a node leading none of the MQTT streams: the issue's bound
FOLLOWER_BOUND_S = 2.0
#: the leader of the QoS 1 stream: JetStream's election (4-9 s), and a QoS 1 publish sent meanwhile may get no
#: PUBACK, so its connection is given up after REPLY_TIMEOUT_S and the event sent again; measured 5.8-16.3 s
#: (the code before these changes: 20.8 s)
LEADER_BOUND_S = 20.0
#: a restarted node must serve MQTT again within this (it caught up within 2-7 s in runs of this machine)
REJOIN_BOUND_S = 60.0
EVERY_S = 0.05
#: an arbiter's command reaches the bridge again: its QoS 1 subscription is a JetStream consumer made anew,
#: which waits for JetStream's meta leader (any node may be that one: its election, and a refused attempt holds
#: the connection 4 s); measured 5.3 s and 14.8 s
COMMAND_BOUND_S = 20.0


@dataclass
class Hub:
    """Stands in for the Broadcaster: records when each event's ``seq`` arrived."""

    arrived: dict[int, float] = field(default_factory=dict)

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        if msg.kind == "events" and isinstance(msg.payload, dict):
            self.arrived.setdefault(int(msg.payload["seq"]), time.monotonic())


@pytest.fixture
def cluster() -> Iterator[NatsCluster]:
    require_binary("nats-server", "/usr/sbin/nats-server")
    with NatsCluster(3) as running:
        yield running


def _choose(cluster: NatsCluster, victim: str) -> tuple[int, int]:
    """Return (the node to kill, the node the reader uses): the victim carries the bridge's connection."""
    leaders = cluster.stream_leaders()
    critical = {leaders.get("$MQTT_msgs"), leaders.get("$MQTT_sess")}
    kill = next(i for i in range(3) if i not in critical) if victim == "follower" else leaders["$MQTT_msgs"]
    return kill, next(i for i in range(3) if i != kill)


@pytest.mark.parametrize("victim, bound", [("follower", FOLLOWER_BOUND_S), ("stream leader", LEADER_BOUND_S)])
def test_publishing_and_reading_resume_after_a_node_dies(cluster: NatsCluster, victim: str, bound: float) -> None:
    kill, reader_node = _choose(cluster, victim)
    urls = [cluster.nodes[(kill + k) % 3].mqtt_url for k in range(3)]   # the bridge starts on the victim
    nodes = parse_urls(urls)
    config = MqttConfig(host=nodes[0].host, port=nodes[0].port, fallbacks=nodes[1:], base_topic=BASE,
                        client_id=f"bridge-{BASE}", keepalive=5)
    reader_urls = parse_urls([cluster.nodes[(reader_node + k) % 3].mqtt_url for k in range(3)])
    hub = Hub()
    sent: dict[int, float] = {}
    acked: list[int] = []
    facts: dict[str, Any] = {}
    commands: list[tuple[str, float]] = []

    async def on_command(topic: str, raw: bytes, retained: bool) -> None:
        commands.append((topic, time.monotonic()))

    async def main() -> None:
        link = MqttLink(config, on_command=on_command, on_acked=acked.append)
        reader = ConsumerLink(hub, [BrokerConfig(host=reader_urls[0].host, port=reader_urls[0].port,  # type: ignore[arg-type]
                                                 fallbacks=reader_urls[1:], bases=(BASE,), subscribe_qos=0)])
        tasks = [asyncio.create_task(link.run()), asyncio.create_task(reader.run())]
        try:
            await reader.wait_ready(30)
            async with asyncio.timeout(30):
                while link.endpoint is None:
                    await asyncio.sleep(0.05)
            assert cluster.node_of_port(link.endpoint.port) == kill
            seq = 0

            async def publish_for(seconds: float) -> None:
                nonlocal seq
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    seq += 1
                    sent[seq] = time.monotonic()
                    assert link.offer_event(f"{BASE}/boards/b1/events", json.dumps({"seq": seq}).encode(), seq)
                    await asyncio.sleep(EVERY_S)

            await publish_for(1.0)
            facts["before"] = seq
            await asyncio.to_thread(cluster.kill, kill)
            facts["killed"] = time.monotonic()

            async def command_until_received() -> None:
                """An arbiter's command through the reader's node, until one reaches the bridge's new node."""
                async with asyncio.timeout(COMMAND_BOUND_S + 20):
                    while not commands:
                        with contextlib.suppress(ActionError):
                            await reader.publish(0, wire.set_topic(BASE, "b1"), b'{"command":"new_game"}')
                        await asyncio.sleep(0.25)

            await asyncio.gather(publish_for(bound + 2.0), command_until_received())
            async with asyncio.timeout(bound + 10):     # what was sent arrives (or the test fails below)
                while len(hub.arrived) < seq or len(acked) < seq:
                    await asyncio.sleep(0.1)
            facts["failovers"] = link.failovers
            # the killed node comes back with its data and serves: the reader moves there and reads
            facts["rejoined_s"] = await asyncio.to_thread(cluster.restart, kill, REJOIN_BOUND_S)
            facts["before_restart"] = seq
            await publish_for(1.0)
            async with asyncio.timeout(10):
                while len(hub.arrived) < seq:
                    await asyncio.sleep(0.1)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    killed = facts["killed"]
    after = [s for s in sent if sent[s] >= killed]
    first_through = min(hub.arrived[s] for s in after) - killed
    worst, late = max((hub.arrived[s] - sent[s], s) for s in sent)
    assert set(hub.arrived) == set(sent) and sorted(acked) == sorted(set(acked)) == sorted(sent)
    assert facts["failovers"] >= 1
    assert first_through < bound, f"events flowed again {first_through:.2f} s after the kill (bound {bound} s)"
    assert worst < bound + 0.5, (f"event {late} took {worst:.2f} s to arrive (bound {bound} s), sent "
                                 f"{sent[late] - killed:.2f} s after the kill; the node restarted after event "
                                 f"{facts['before_restart']}")
    assert commands and commands[0][0] == wire.set_topic(BASE, "b1")
    command_after = commands[0][1] - killed
    assert command_after < COMMAND_BOUND_S, f"a command came through {command_after:.2f} s after the kill"
    assert facts["rejoined_s"] < REJOIN_BOUND_S + bound * 2
