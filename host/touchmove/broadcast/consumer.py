"""MQTT side of the broadcaster: subscribe to the bridges' topics on one or more brokers (aiomqtt 2.x).

One connection per broker; each connection subscribes to every bridge base topic configured for it and
hands decoded messages to the :class:`~touchmove.broadcast.broadcaster.Broadcaster`. A lost connection is
noticed at once (a reset) or within about 2 s (TCP timeouts) and the next node of the broker is tried at once,
then every node again with backoff; retained topics bring the state back on reconnect. Arbiter commands go
out on the same connection as the board's messages came in.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Sequence
from typing import Protocol

import aiomqtt

from touchmove.broadcast import bridge_topics
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.tournament import BrokerConfig, TournamentError
from touchmove.mqtt.brokers import BrokerSettingError, Endpoint, Endpoints, tls_context
from touchmove.mqtt.connection import (
    CONNECT_TIMEOUT_S,
    REPLY_TIMEOUT_S,
    connect_timeout,
    one_attempt,
    socket_options,
    subscribe_all,
)

log = logging.getLogger(__name__)

BACKOFF_START = 0.5
BACKOFF_MAX = 10.0


def make_client(cfg: BrokerConfig, identifier: str, node: Endpoint | None = None,
                timeout: float = CONNECT_TIMEOUT_S) -> aiomqtt.Client:
    """An aiomqtt client for one broker (``node``: one of its cluster nodes) with auth and TLS; ``timeout``: how
    long its CONNACK may take."""
    node = node or cfg.endpoints[0]
    context = tls_context(cfg.ca_file, cfg.cert_file, cfg.key_file) if node.tls else None
    return aiomqtt.Client(
        node.host, node.port, username=cfg.username, password=cfg.password, identifier=identifier,
        tls_context=context, keepalive=15, max_queued_outgoing_messages=10_000, timeout=timeout,
        socket_options=socket_options(),
    )


def check_brokers(brokers: Sequence[BrokerConfig]) -> None:
    """Raise TournamentError (one line) for a broker setting that could only fail once serving: a topic
    filter the broker would refuse (``+``, ``#`` in a base), TLS files missing or not certificates."""
    for i, cfg in enumerate(brokers, 1):
        if cfg.share_group is not None and any(c in cfg.share_group for c in "/+#\0"):
            raise TournamentError(f"[[brokers]] #{i}: share_group {cfg.share_group!r} must be one topic level "
                                  "(no /, + or #), as the base topic")
        for base in cfg.bases:
            if any(c in base for c in "+#\0") or not all(base.split("/")):
                raise TournamentError(f"[[brokers]] #{i}: base topic {base!r} cannot be a topic level "
                                      "(no +, # or empty level)")
            for topic in bridge_topics.subscriptions(base, cfg.share_group):
                try:
                    aiomqtt.Wildcard(topic)
                except ValueError as exc:
                    raise TournamentError(f"[[brokers]] #{i}: topic filter {topic!r}: {exc}") from None
        if any(node.tls for node in cfg.endpoints):
            for key, file in (("ca_file", cfg.ca_file), ("cert_file", cfg.cert_file), ("key_file", cfg.key_file)):
                if file is not None and not os.path.isfile(file):
                    raise TournamentError(f"[[brokers]] #{i}: {key} {file}: no such file")
            try:
                tls_context(cfg.ca_file, cfg.cert_file, cfg.key_file)
            except BrokerSettingError as exc:
                raise TournamentError(f"[[brokers]] #{i}: {' '.join(str(exc).split())}") from None


class MessageSink(Protocol):
    """What takes the decoded messages: the :class:`~touchmove.broadcast.broadcaster.Broadcaster`, or the
    LiveChess-compatible server's boards (:mod:`touchmove.livechess`)."""

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None: ...


class MqttLink:
    """The broadcaster's connections to the brokers (also the LiveChess-compatible server's)."""

    def __init__(self, hub: MessageSink, brokers: Sequence[BrokerConfig], client_prefix: str = "touchmove-broadcast"
                 ) -> None:
        self.hub = hub
        self.client_prefix = client_prefix
        self.brokers = list(brokers)
        self._clients: dict[int, aiomqtt.Client] = {}
        self.ready = [asyncio.Event() for _ in self.brokers]
        self._tag = uuid.uuid4().hex[:8]
        #: per broker: the pause after its nodes all failed to answer, doubled each round up to BACKOFF_MAX
        self._backoff: dict[int, float] = {}
        #: per broker: the node its main connection is on (a standby connection avoids it)
        self._on_node: dict[int, Endpoint] = {}
        self._standby_on: dict[int, Endpoint] = {}
        #: every connection serving now (main and standby)
        self._live: set[aiomqtt.Client] = set()

    def backlog(self) -> int:
        """Return how many messages the connections have received and not yet handed over."""
        queues = (getattr(client, "_queue", None) for client in self._live)
        return sum(q.qsize() for q in queues if isinstance(q, asyncio.Queue))

    async def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until every broker is connected and subscribed."""
        async with asyncio.timeout(timeout):
            for event in self.ready:
                await event.wait()

    async def publish(self, broker: int, topic: str, payload: bytes) -> None:
        client = self._clients.get(broker)
        if client is None:
            raise ActionError("the broker is not connected: try again shortly")
        try:
            await client.publish(topic, payload, qos=1, retain=False, timeout=REPLY_TIMEOUT_S)
        except aiomqtt.MqttError as exc:
            raise ActionError(f"publish failed: {exc}") from exc

    async def run(self) -> None:
        """Serve every broker until cancelled."""
        async with asyncio.TaskGroup() as tg:
            for i, cfg in enumerate(self.brokers):
                tg.create_task(self._serve(i, cfg))
                if cfg.events_standby and len(cfg.endpoints) > 1:
                    tg.create_task(self._standby(i, cfg))

    async def _standby(self, index: int, cfg: BrokerConfig) -> None:
        """Keep a second connection of broker ``index``, to a node the main one is not on, subscribed to the events
        only (QoS 0), until cancelled: when the main connection's node dies the events still come this way."""
        nodes = Endpoints(cfg.endpoints, start=1)
        attempt = 0
        while True:
            if nodes.current == self._on_node.get(index):
                nodes.failed()
            node = nodes.current
            attempt += 1
            try:
                await one_attempt(self._read(index, cfg, node, nodes, attempt, standby=True))
            except aiomqtt.MqttError as exc:
                log.warning("broker %s (events' standby): %s", node.url, exc)
            finally:
                self._standby_on.pop(index, None)
            if nodes.failed():
                await asyncio.sleep(BACKOFF_START)

    async def _serve(self, index: int, cfg: BrokerConfig) -> None:
        nodes = Endpoints(cfg.endpoints)
        self._backoff[index] = BACKOFF_START
        attempt = 0
        while True:
            if nodes.current == self._standby_on.get(index) and len(cfg.endpoints) > 2:
                nodes.failed()      # the events' standby is there: another node, so one death loses neither
            node = nodes.current
            attempt += 1     # a new client id each time: NATS holds a CONNECT of a dead node's id for 11 s
            try:
                await one_attempt(self._read(index, cfg, node, nodes, attempt))
            except aiomqtt.MqttError as exc:
                log.warning("broker %s: %s", node.url, exc)
            finally:
                self._clients.pop(index, None)
                self._on_node.pop(index, None)
                self.ready[index].clear()
            if nodes.failed():      # every node tried: back off
                backoff = self._backoff[index]
                log.info("no node of broker #%d answered; retrying in %.1f s", index + 1, backoff)
                await asyncio.sleep(backoff)
                self._backoff[index] = min(backoff * 2, BACKOFF_MAX)

    async def _read(self, index: int, cfg: BrokerConfig, node: Endpoint, nodes: Endpoints, attempt: int,
                    *, standby: bool = False) -> None:
        """Connect to ``node`` of broker ``index``, subscribe (``standby``: to the events only), and hand every
        message to the broadcaster until the connection fails (raised) or the task is cancelled."""
        name = f"{self.client_prefix}-{self._tag}-{index}-{'standby-' if standby else ''}{attempt}"
        async with make_client(cfg, name, node, connect_timeout(nodes.rounds_failed)) as client:
            topics = [topic for base in cfg.bases for topic in bridge_topics.subscriptions(base, cfg.share_group)]
            if standby:
                topics = [topic for topic in topics if topic.endswith("/events")]
            await subscribe_all(client, topics, 0 if standby else cfg.subscribe_qos)
            nodes.connected()
            self._live.add(client)
            if standby:
                self._standby_on[index] = node
                log.info("events' standby subscribed on %s", node.url)
            else:
                self._clients[index] = client
                self._on_node[index] = node
                self.ready[index].set()
                log.info("subscribed to %s on %s", ", ".join(cfg.bases), node.url)
                self._backoff[index] = BACKOFF_START
            try:
                await self._hand_over(index, cfg, client)
            finally:
                self._live.discard(client)

    async def _hand_over(self, index: int, cfg: BrokerConfig, client: aiomqtt.Client) -> None:
        """Decode every message ``client`` receives and hand it to the hub until the connection fails."""
        async for message in client.messages:
            payload = message.payload
            if isinstance(payload, str):
                raw = payload.encode()
            elif isinstance(payload, bytes | bytearray):
                raw = bytes(payload)
            else:
                raw = b"" if payload is None else str(payload).encode()
            msg = bridge_topics.parse(message.topic.value, raw, cfg.bases, bool(message.retain))
            if msg is None:
                continue
            try:
                self.hub.handle(msg, index)
            except Exception:  # one bad message must not stop the stream
                log.exception("message on %s could not be handled", message.topic.value)
