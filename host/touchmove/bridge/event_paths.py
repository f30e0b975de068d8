"""Events at QoS 0 on connections of their own (``[mqtt] events_qos = 0``, for a NATS cluster).

On NATS every QoS 1 publish (and every retained one) is stored in a JetStream stream before the node reads the
next packet of its connection: when the node leading that stream dies, every bridge's events wait for the
election of another (4-10 s measured). A QoS 0 publish that is not retained is plain NATS: no stream, no leader.

So the events go out at QoS 0 on a connection that carries nothing else, to one node (the *primary*), while a
second connection to another node stands by, connected (each path a :class:`~touchmove.mqtt.link.MqttLink` kept
away from the other's node). When the primary's connection ends (its node died, or
stopped answering), the standby becomes the primary at once (no CONNECT to wait for: a CONNECT reads the
sessions' stream, which may be electing too) and the events of the last :data:`RESEND_S` seconds are sent
again on it: those the dead node took but had not passed on. Consumers drop what they already have by ``seq``
(and hold a later event until the one before it comes, :mod:`touchmove.broadcast.bridge_ingest`). Then a new
standby is connected to a node not in use.

An event counts as delivered (the journal's ``published`` mark) once it is written to the primary's socket; what
a crash of the bridge loses after that is what the consumers fill from the retained PGN, as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import aiomqtt

from touchmove.mqtt.brokers import Endpoint, Endpoints
from touchmove.mqtt.connection import REPLY_TIMEOUT_S
from touchmove.mqtt.link import Backoff, ClientSettings, MqttLink

log = logging.getLogger(__name__)

#: Events written this long before the primary's connection ended are sent again on the next one: longer than a
#: dead peer takes to be noticed (TCP user timeout 2 s, keepalive probes 1 s + 2 x 1 s).
RESEND_S = 6.0
#: Pause before connecting a path again after every node failed it (doubled up to RETRY_MAX_S).
RETRY_FIRST_S = 0.25
RETRY_MAX_S = 5.0


class Event:
    """One event to publish: topic, payload, and the tag acknowledged back to the bridge once written."""

    __slots__ = ("payload", "tag", "topic")

    def __init__(self, topic: str, payload: bytes, tag: Any) -> None:
        self.topic = topic
        self.payload = payload
        self.tag = tag


class EventPaths:
    """Publish events at QoS 0 on a primary connection, with a connected standby to another node."""

    def __init__(self, nodes: tuple[Endpoint, ...], settings: ClientSettings, client_id: str,
                 on_sent: Callable[[Any], None]) -> None:
        self.nodes = nodes
        self._on_sent = on_sent
        self._queue: deque[Event] = deque()
        #: (when written, the event) for the last RESEND_S seconds, oldest first
        self._recent: deque[tuple[float, Event]] = deque()
        #: connected paths, the primary first
        self._paths: list[tuple[Endpoint, aiomqtt.Client]] = []
        self._wake = asyncio.Event()
        #: how many times the primary changed, and how many events were sent again after that
        self.switches = 0
        self.resent = 0
        #: the paths' connections (two where there are two nodes or more), each a :class:`MqttLink`
        self.links = [self._path_link(slot, settings, client_id) for slot in range(min(2, len(nodes)))]

    def __len__(self) -> int:
        return len(self._queue)

    def offer(self, topic: str, payload: bytes, tag: Any) -> None:
        self._queue.append(Event(topic, payload, tag))
        self._wake.set()

    @property
    def primary(self) -> Endpoint | None:
        """The node the events go to now, or None while no path is connected."""
        return self._paths[0][0] if self._paths else None

    async def run(self) -> None:
        """Keep the paths connected and send the events until cancelled."""
        async with asyncio.TaskGroup() as group:
            for link in self.links:
                group.create_task(link.run())
            group.create_task(self._send())

    def _path_link(self, slot: int, settings: ClientSettings, client_id: str) -> MqttLink:
        """Return path ``slot``'s connection: from node ``slot`` on, kept away from the node the other path is on."""

        def the_other_node() -> Endpoint | None:     # asked while this path is not connected
            return next((node for node, _ in self._paths), None)

        async def serve(client: aiomqtt.Client, node: Endpoint) -> None:
            await self._serve(slot, client, node)

        return MqttLink(Endpoints(self.nodes, start=slot), settings, serve, client_id=f"{client_id}-events-{slot}",
                        log=log, label=f"events' path {slot} to", avoid=the_other_node,
                        backoff=Backoff(RETRY_FIRST_S, RETRY_MAX_S))

    async def _serve(self, slot: int, client: aiomqtt.Client, node: Endpoint) -> None:
        """Use a connected path (the primary when no other is) until its connection ends (raised)."""
        entry = (node, client)
        self._paths.append(entry)
        log.info("events' path %d connected to %s%s", slot, node.url,
                 " (primary)" if self._paths[0] is entry else " (standby)")
        self._wake.set()
        try:
            async for _ in client.messages:     # nothing is subscribed: this ends (raised) when the connection does
                pass
        finally:
            self._drop(entry)
        raise aiomqtt.MqttError("the connection ended")

    def _drop(self, entry: tuple[Endpoint, aiomqtt.Client]) -> None:
        """A path's connection ended: when it was the primary, the standby takes over and gets the recent events."""
        was_primary = bool(self._paths) and self._paths[0] is entry
        if entry in self._paths:
            self._paths.remove(entry)
        if not was_primary:
            return
        self.switches += 1
        cutoff = time.monotonic() - RESEND_S
        again = [event for at, event in self._recent if at >= cutoff]
        self._recent.clear()
        self._queue.extendleft(reversed(again))
        self.resent += len(again)
        log.warning("events' node %s:%s gone: %d events of the last %.0f s sent again on %s", entry[0].host,
                    entry[0].port, len(again), RESEND_S,
                    f"{self._paths[0][0].host}:{self._paths[0][0].port}" if self._paths else "the next node")
        self._wake.set()

    async def _send(self) -> None:
        while True:
            if not self._queue or not self._paths:
                self._wake.clear()
                await self._wake.wait()
                continue
            entry = self._paths[0]
            event = self._queue.popleft()
            try:
                await entry[1].publish(event.topic, event.payload, qos=0, timeout=REPLY_TIMEOUT_S)
            except aiomqtt.MqttError:
                self._queue.appendleft(event)
                await asyncio.sleep(0.05)       # its keeper notices the broken connection and drops it
                continue
            now = time.monotonic()
            self._recent.append((now, event))
            while self._recent and self._recent[0][0] < now - RESEND_S:
                self._recent.popleft()
            self._on_sent(event.tag)
