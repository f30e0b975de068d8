"""Events at QoS 0 on connections of their own (``[mqtt] events_qos = 0``, for a NATS cluster).

On NATS every QoS 1 publish (and every retained one) is stored in a JetStream stream before the node reads the
next packet of its connection: when the node leading that stream dies, every bridge's events wait for the
election of another (4-10 s measured). A QoS 0 publish that is not retained is plain NATS: no stream, no leader.

So the events go out at QoS 0 on a connection that carries nothing else, to one node (the *primary*), while a
second connection to another node stands by, connected. When the primary's connection ends (its node died, or
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

from touchmove.mqtt.brokers import Endpoint
from touchmove.mqtt.connection import REPLY_TIMEOUT_S

log = logging.getLogger(__name__)

#: Events written this long before the primary's connection ended are sent again on the next one: longer than a
#: dead peer takes to be noticed (TCP user timeout 2 s, keepalive probes 1 s + 2 x 1 s).
RESEND_S = 6.0
#: Pause before connecting a path again after its connection failed (doubled up to RETRY_MAX_S).
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

    def __init__(self, nodes: tuple[Endpoint, ...], client_for: Callable[[Endpoint, str], aiomqtt.Client],
                 client_id: str, on_sent: Callable[[Any], None]) -> None:
        self.nodes = nodes
        self._client_for = client_for
        self._client_id = client_id
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
            for slot in range(min(2, len(self.nodes))):
                group.create_task(self._keep(slot))
            group.create_task(self._send())

    def _next_node(self, start: int) -> int:
        """The index of the first node from ``start`` on that no path uses (``start`` itself when all are)."""
        used = {node for node, _ in self._paths}
        for k in range(len(self.nodes)):
            i = (start + k) % len(self.nodes)
            if self.nodes[i] not in used:
                return i
        return start % len(self.nodes)

    async def _keep(self, slot: int) -> None:
        """Keep one path connected (to a node no other path uses) for as long as the task runs."""
        start, attempt, delay = slot, 0, RETRY_FIRST_S
        while True:
            index = self._next_node(start)
            node = self.nodes[index]
            attempt += 1
            try:
                async with self._client_for(node, f"{self._client_id}-events-{slot}-{attempt}") as client:
                    entry = (node, client)
                    self._paths.append(entry)
                    delay = RETRY_FIRST_S
                    log.info("events' path %d connected to %s%s", slot, node.host,
                             f":{node.port}" + (" (primary)" if self._paths[0] is entry else " (standby)"))
                    self._wake.set()
                    try:
                        async for _ in client.messages:     # nothing is subscribed: this ends when it breaks
                            pass
                    finally:
                        self._drop(entry)
            except aiomqtt.MqttError as exc:
                log.warning("events' path to %s:%s: %s", node.host, node.port, exc)
            start = index + 1
            await asyncio.sleep(delay)
            delay = min(RETRY_MAX_S, delay * 2)

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
