"""Events at QoS 0 through a real 3-node NATS cluster (``[mqtt] events_qos = 0`` and the broadcaster's
``events_standby``): a node is killed (SIGKILL) while the bridge's link publishes an event every 50 ms, and every
event must reach the reader, within seconds, whichever node died: the one the bridge's events go to (made the
``$MQTT_msgs`` leader too, the case where every QoS 1 publish waited 4-10 s for JetStream's election) or the
reader's. Counted: events sent, written by the bridge (acknowledged to it), arrived at the reader (first copy),
and the longest wait of one sent after the kill."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.helpers import EventPacer
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.consumer import BridgeFeeds as ConsumerLink
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt.brokers import parse_urls
from touchmove.sim.natscluster import NatsCluster

BASE = "hall-q"
EVERY_S = 0.05
#: the issue's goal is 2 s over the settle time; on this shared 2-core machine a loaded run gets some slack
BOUND_S = 3.0


@dataclass
class Hub:
    """Stands in for the broadcaster: when each seq first arrived, and how many copies came."""

    arrived: dict[int, float] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        if msg.kind == "events" and isinstance(msg.payload, dict):
            seq = int(msg.payload["seq"])
            self.arrived.setdefault(seq, time.monotonic())
            self.copies[seq] = self.copies.get(seq, 0) + 1


@pytest.mark.parametrize("victim", ["the bridge's node, leading $MQTT_msgs", "the reader's node"])
def test_no_event_waits_for_an_election(cluster: NatsCluster, victim: str) -> None:
    bridge_first = cluster.stream_leaders()["$MQTT_msgs"]
    reader_first = (bridge_first + 1) % 3
    urls = parse_urls([cluster.nodes[(bridge_first + k) % 3].mqtt_url for k in range(3)])
    config = MqttConfig(host=urls[0].host, port=urls[0].port, fallbacks=urls[1:], base_topic=BASE,
                        client_id=f"bridge-{BASE}", keepalive=5, events_qos=0)
    reader_urls = parse_urls([cluster.nodes[(reader_first + k) % 3].mqtt_url for k in range(3)])
    hub = Hub()
    sent: dict[int, float] = {}
    written: set[int] = set()
    facts: dict[str, Any] = {}

    async def on_command(topic: str, raw: bytes, retained: bool) -> None:
        pass

    async def main() -> None:
        link = BridgeLink(config, on_command=on_command, on_acked=written.add)
        assert link.event_paths is not None
        reader = ConsumerLink(hub, [BrokerConfig(host=reader_urls[0].host, port=reader_urls[0].port,  # type: ignore[arg-type]
                                                 fallbacks=reader_urls[1:], bases=(BASE,), subscribe_qos=0,
                                                 events_standby=True)])
        tasks = [asyncio.create_task(link.run()), asyncio.create_task(reader.run())]
        pacer = EventPacer(link, f"{BASE}/boards/b1/events", EVERY_S, sent)
        publish_for = pacer.publish_for

        try:
            await reader.wait_ready(60)
            async with asyncio.timeout(60):     # both paths of each side connected, and events through both
                while (len(link.event_paths._paths) < 2 or 0 not in reader.standby_on
                       or not hub.arrived or max(hub.copies.values()) < 2):
                    await publish_for(0.2)
            primary = link.event_paths.primary
            assert primary is not None
            node_of = {n.mqtt_port: i for i, n in enumerate(cluster.nodes)}
            kill = node_of[primary.port] if victim.startswith("the bridge") else node_of[reader.links[0].endpoint.port]
            facts.update(kill=kill, leaders=cluster.stream_leaders(), meta=cluster.meta_leader(),
                         standby=node_of[reader.standby_on[0].port], reader=node_of[reader.links[0].endpoint.port])
            before = pacer.seq
            await asyncio.to_thread(cluster.kill, kill)
            facts["killed"] = time.monotonic()
            facts["before"] = before
            await publish_for(8.0)
            async with asyncio.timeout(15):
                while len(hub.arrived) < len(sent):
                    await asyncio.sleep(0.1)
            facts["rejoined_s"] = await asyncio.to_thread(cluster.restart, kill, 90.0)
            await publish_for(1.0)
            async with asyncio.timeout(15):
                while len(hub.arrived) < len(sent):
                    await asyncio.sleep(0.1)
            facts["switches"], facts["resent"] = link.event_paths.switches, link.event_paths.resent
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    try:
        asyncio.run(main())
    except TimeoutError:
        missing = sorted(set(sent) - set(hub.arrived))
        killed = facts.get("killed", 0.0)
        pytest.fail(f"{len(missing)} of {len(sent)} events never arrived, sent at "
                    f"{[round(sent[s] - killed, 2) for s in missing[:20]]} s after the kill; {facts}")
    killed = facts["killed"]
    assert set(written) == set(sent) == set(hub.arrived)
    waits = {s: hub.arrived[s] - sent[s] for s in sent if sent[s] >= killed - 1.0}
    worst = max(waits, key=waits.__getitem__)
    assert waits[worst] < BOUND_S, (f"event {worst}, sent {sent[worst] - killed:.2f} s after the kill, took "
                                    f"{waits[worst]:.2f} s; {facts}")
    if victim.startswith("the bridge"):
        assert facts["switches"] >= 1 and facts["resent"] > 0, facts
