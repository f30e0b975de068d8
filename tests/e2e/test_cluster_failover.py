"""Fail-over in seconds on a real 3-node NATS cluster: the bridge's MQTT link publishes through node A, the
broadcaster's consumer reads through node B; a node is killed (SIGKILL) and the time until events flow again
is measured against a bound; the killed node is restarted and must serve MQTT again.

Which node dies matters on NATS: every QoS 1 publish waits for the leader of the ``$MQTT_msgs`` stream,
every CONNECT reads ``$MQTT_sess``, and the leader of ``$MQTT_rmsgs`` or of the meta group stalled QoS 1
publishes for seconds too. Killing a node that leads none of these (and carries a connection) must cost
under 2 s; killing their leader costs JetStream's election on top (NATS 2.9's Raft waits 4-9 s for a silent
leader), hence the larger bound there (the issue's 2 s is not met for that node). Commands need a new
JetStream consumer, made by the meta leader, which may be any node: their bound is the election's. Before
these fixes the same kill took 20.8 s (10 s CONNECT timeouts, connections dropped on a refused subscription).

The reader subscribes at QoS 0 (as the broadcaster does on NATS), so what is published while a surviving node has
dropped it is not delivered to it (the broadcaster fills that gap from the retained PGN): such events must still
be acknowledged to the bridge, and everything sent while the reader is subscribed must arrive. A failure prints
who leads what and the last lines of each node's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.helpers import EventPacer
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.consumer import BridgeFeeds as ConsumerLink
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt import wire
from touchmove.mqtt.brokers import parse_urls
from touchmove.mqtt.link import MqttLink
from touchmove.sim.natscluster import NatsCluster

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
#: the connection 4 s, and a consumer may first be placed on the dead node); measured 5.3 s and 14.8 s, and
#: 23.5 s and 23.8 s in 2 of 6 runs on 2026-12-04 (three 4-s refusals in a row), 41.3 s with one core held by a
#: busy loop: a bound on NATS's elections, which this test checks end (the figures are in docs/changelog.md)
COMMAND_BOUND_S = 60.0
#: an event sent this close after a span in which the reader was not subscribed may be lost to it (QoS 0)
AWAY_MARGIN_S = 1.0
#: a surviving node that drops the reader has stopped delivering to it a while before: in a fresh-clone CI run
#: (2026-12-03) every event from the kill on was lost to the reader, which was dropped 4.0 s after the kill and
#: back at 6.5 s, while the bridge had all 451 acknowledged
AWAY_LEAD_S = 5.0


@dataclass
class Hub:
    """Stands in for the Broadcaster: records when each event's ``seq`` arrived, and when the reader was not
    subscribed (a QoS 0 reader misses what is published meanwhile; the broadcaster fills such gaps from the
    retained PGN)."""

    arrived: dict[int, float] = field(default_factory=dict)
    #: the warm-up events (negative ``seq``) that arrived
    warmed: set[int] = field(default_factory=set)
    away: list[tuple[float, float]] = field(default_factory=list)

    def missed_while_away(self, sent_at: float) -> bool:
        """Whether an event sent at ``sent_at`` may have been published while the reader was away."""
        return any(start - AWAY_LEAD_S <= sent_at <= end + AWAY_MARGIN_S for start, end in self.away)

    async def watch(self, ready: asyncio.Event, link: MqttLink) -> None:
        """Record the spans in which the reader is not subscribed, until cancelled. A reconnection quicker than
        the poll (the link subscribed again between two looks) is a span too, from the look before: a CI run lost
        10 events sent 7.8 s after a kill to such a span unseen (the reader subscribed again on another node, which
        the others learn of a moment later)."""
        connects = link.connects
        seen = time.monotonic()
        while True:
            await ready.wait()
            while ready.is_set() and link.connects == connects:
                seen = time.monotonic()
                await asyncio.sleep(0.02)
            start = seen if ready.is_set() else time.monotonic()
            self.away.append((start, float("inf")))
            await ready.wait()
            connects = link.connects
            self.away[-1] = (start, time.monotonic())

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        if msg.kind == "events" and isinstance(msg.payload, dict):
            seq = int(msg.payload["seq"])
            if seq < 0:
                self.warmed.add(seq)
            else:
                self.arrived.setdefault(seq, time.monotonic())


def _choose(cluster: NatsCluster, victim: str) -> tuple[int, int]:
    """Return (the node to kill, the node the reader uses): the victim carries the bridge's connection.

    A follower leads nothing a client waits for: no MQTT stream (QoS 1 messages, sessions, retained messages)
    and not JetStream's meta group. Killing the leader of the retained messages or the meta leader stalled QoS 1
    publishes on the surviving nodes for 3-6 s in measurements here (the cause of this test's earlier failures),
    so where every node leads something, the streams a node leads are moved off it first."""
    if victim == "follower":
        free = [i for i in range(3) if i not in cluster.leaders()]
        if free:
            kill = free[0]
        else:
            meta = cluster.meta_leader()
            leads = cluster.stream_leaders()
            kill = min((i for i in range(3) if i != meta), key=lambda i: sum(n == i for n in leads.values()))
            cluster.lead_nothing(kill)
        assert kill not in cluster.leaders(), "the follower leads something: its death would cost an election"
    else:
        kill = cluster.stream_leaders()["$MQTT_msgs"]
    return kill, next(i for i in range(3) if i != kill)


def _state(cluster: NatsCluster, sent: dict[int, float], acked: list[int], hub: Hub, facts: dict[str, Any]) -> str:
    """What a failure needs to be understood: the counts, the reader's absences, who leads what now, and the
    last lines of every node's log."""
    killed = facts.get("killed", 0.0)
    lines = []
    for node in cluster.nodes:
        with contextlib.suppress(OSError):
            log = [line for line in (cluster.workdir / f"{node.name}.log").read_text(errors="replace").splitlines()
                   if "connect to route" not in line]    # the survivors retry the dead node's route every second
            lines.append(f"--- {node.name} (last lines)\n" + "\n".join(log[-25:]))
    with contextlib.suppress(Exception):
        lines.append(f"leaders now: streams {cluster.stream_leaders()}, meta {cluster.meta_leader()}")
    # the counts last: a CI log cut in the middle keeps its tail
    unacked = sorted(set(sent) - set(acked))
    missing = sorted(set(sent) - set(hub.arrived))
    lines.append(f"sent {len(sent)} ({facts.get('before', '?')} before the kill), acknowledged {len(set(acked))} "
                 f"(not: {unacked[:20]}), arrived {len(hub.arrived)}; missing {missing[:20]} sent at "
                 f"{[round(sent[s] - killed, 2) for s in missing[:20]]} s after the kill; reader away (s after "
                 f"the kill) {[(round(a - killed, 2), round(b - killed, 2)) for a, b in hub.away]}; "
                 f"{ {k: v for k, v in facts.items() if k != 'killed'} }")
    return "\n".join(lines)


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
        bridge_link = BridgeLink(config, on_command=on_command, on_acked=lambda s: acked.append(s) if s > 0 else None)
        reader = ConsumerLink(hub, [BrokerConfig(host=reader_urls[0].host, port=reader_urls[0].port,  # type: ignore[arg-type]
                                                 fallbacks=reader_urls[1:], bases=(BASE,), subscribe_qos=0)])
        tasks = [asyncio.create_task(bridge_link.run()), asyncio.create_task(reader.run())]
        try:
            await reader.wait_ready(30)
            tasks.append(asyncio.create_task(hub.watch(reader.ready[0], reader.links[0])))
            async with asyncio.timeout(30):
                while bridge_link.link.endpoint is None:
                    await asyncio.sleep(0.05)
            assert cluster.node_of_port(bridge_link.link.endpoint.port) == kill
            # NATS tells the other nodes of a subscription a moment after its SUBACK: until then what the bridge
            # publishes on its node does not reach the reader (3 of 8 runs on a busy machine lost the first event,
            # the reader never away). The count starts once a warm-up event has come through.
            async with asyncio.timeout(30):
                warm = 0
                while not hub.warmed:
                    warm -= 1
                    bridge_link.offer_event(f"{BASE}/boards/b1/events", json.dumps({"seq": warm}).encode(), warm)
                    await asyncio.sleep(0.2)
            facts["warm_ups"] = -warm
            pacer = EventPacer(bridge_link, f"{BASE}/boards/b1/events", EVERY_S, sent)
            publish_for = pacer.publish_for

            await publish_for(1.0)
            facts["before"] = pacer.seq
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
            facts["published_s"] = round(time.monotonic() - facts["killed"], 2)
            async with asyncio.timeout(bound + 10):     # what was sent is acknowledged and, unless the reader was
                while len(acked) < pacer.seq or any(       # away, arrives (or the test fails below)
                        s not in hub.arrived and not hub.missed_while_away(sent[s]) for s in sent):
                    await asyncio.sleep(0.1)
            facts["failovers"] = bridge_link.link.failovers
            # the killed node comes back with its data and serves: the reader moves there and reads
            facts["rejoined_s"] = await asyncio.to_thread(cluster.restart, kill, REJOIN_BOUND_S)
            facts["before_restart"] = pacer.seq
            await publish_for(1.0)
            async with asyncio.timeout(10):
                while any(s not in hub.arrived and not hub.missed_while_away(sent[s]) for s in sent):
                    await asyncio.sleep(0.1)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    try:
        asyncio.run(main())
    except TimeoutError:
        pytest.fail(f"events still missing: {_state(cluster, sent, acked, hub, facts)}")
    killed = facts["killed"]
    after = [s for s in sent if sent[s] >= killed and s in hub.arrived]
    first_through = min(hub.arrived[s] for s in after) - killed
    worst, late = max((hub.arrived[s] - sent[s], s) for s in hub.arrived)
    missed = set(sent) - set(hub.arrived)
    assert all(hub.missed_while_away(sent[s]) for s in missed), _state(cluster, sent, acked, hub, facts)
    assert len(missed) < len(sent) // 2, f"the reader was away too long: {_state(cluster, sent, acked, hub, facts)}"
    assert sorted(acked) == sorted(set(acked)) == sorted(sent)
    assert facts["failovers"] >= 1
    assert first_through < bound, f"events flowed again {first_through:.2f} s after the kill (bound {bound} s)"
    assert worst < bound + 0.5, (f"event {late} took {worst:.2f} s to arrive (bound {bound} s), sent "
                                 f"{sent[late] - killed:.2f} s after the kill; the node restarted after event "
                                 f"{facts['before_restart']}")
    assert commands and commands[0][0] == wire.set_topic(BASE, "b1")
    command_after = commands[0][1] - killed
    assert command_after < COMMAND_BOUND_S, f"a command came through {command_after:.2f} s after the kill"
    assert facts["rejoined_s"] < REJOIN_BOUND_S + bound * 2
