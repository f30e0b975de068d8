"""MQTT side of the broadcaster: subscribe to the bridges' topics on one or more brokers (aiomqtt 2.x).

One connection per broker (a :class:`touchmove.mqtt.link.MqttLink`); each connection subscribes to every bridge
base topic configured for it and hands decoded messages to the
:class:`~touchmove.broadcast.broadcaster.Broadcaster`. A lost connection is noticed at once (a reset) or within
about 2 s (TCP timeouts) and the next node of the broker is tried at once, then every node again with backoff;
retained topics bring the state back on reconnect. Arbiter commands go out on the same connection as the
board's messages came in.
"""

from __future__ import annotations

import asyncio
import functools
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
from touchmove.mqtt.connection import REPLY_TIMEOUT_S
from touchmove.mqtt.link import Backoff, ClientSettings, MqttLink, Subscriptions, hand_over

log = logging.getLogger(__name__)

BACKOFF_START = 0.5
BACKOFF_MAX = 10.0
#: How often a command waiting for the broker's confirmation checks that its connection is still there (s).
DROP_CHECK_S = 0.1


def client_settings(cfg: BrokerConfig) -> ClientSettings:
    """The settings of the broadcaster's clients of one broker: its credentials and TLS files."""
    return ClientSettings(cfg.username, cfg.password, cfg.ca_file, cfg.cert_file, cfg.key_file,
                          max_queued=10_000)


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


class BridgeFeeds:
    """The broadcaster's connections to the brokers (also the LiveChess-compatible server's): per broker a main
    connection (:class:`~touchmove.mqtt.link.MqttLink`) and, with ``events_standby``, a standby one."""

    def __init__(self, hub: MessageSink, brokers: Sequence[BrokerConfig], client_prefix: str = "touchmove-broadcast"
                 ) -> None:
        self.hub = hub
        self.client_prefix = client_prefix
        self.brokers = list(brokers)
        self.ready = [asyncio.Event() for _ in self.brokers]
        self._tag = uuid.uuid4().hex[:8]
        #: every connection serving now (main and standby)
        self._live: set[aiomqtt.Client] = set()
        #: per broker: its main connection, and its events' standby (with ``events_standby`` and two nodes or more)
        self.links: list[MqttLink] = []
        self.standbys: dict[int, MqttLink] = {}
        for index, cfg in enumerate(self.brokers):
            self.links.append(self._main(index, cfg))
            if cfg.events_standby and len(cfg.endpoints) > 1:
                self.standbys[index] = self._standby(index, cfg)

    @property
    def standby_on(self) -> dict[int, Endpoint]:
        """The node each broker's events' standby is subscribed on now."""
        return {i: link.endpoint for i, link in self.standbys.items() if link.endpoint is not None}

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
        """Publish an arbiter's command (QoS 1) on broker ``broker``'s connection; return once the broker has it.
        Raise :class:`ActionError` when it cannot be sent, when the broker does not confirm it within
        ``REPLY_TIMEOUT_S``, or at once when the connection drops meanwhile (aiomqtt would leave the publish waiting
        for its whole timeout)."""
        link = self.links[broker] if broker < len(self.links) else None
        client = link.client if link is not None else None
        if link is None or client is None:
            raise ActionError("the broker is not connected: try again shortly")
        sending = asyncio.ensure_future(client.publish(topic, payload, qos=1, retain=False, timeout=REPLY_TIMEOUT_S))
        try:
            while not (await asyncio.wait([sending], timeout=DROP_CHECK_S))[0]:
                if link.client is not client:
                    sending.cancel()
                    raise ActionError("the connection to the broker dropped before the broker confirmed the command: "
                                      "see whether it took effect, else try again")
            sending.result()
        except aiomqtt.MqttError as exc:
            raise ActionError(f"publish failed: {exc}") from exc
        finally:
            sending.cancel()

    async def run(self) -> None:
        """Serve every broker until cancelled."""
        async with asyncio.TaskGroup() as tg:
            for index, link in enumerate(self.links):
                tg.create_task(link.run())
                if index in self.standbys:
                    tg.create_task(self.standbys[index].run())

    def _topics(self, cfg: BrokerConfig) -> list[str]:
        return [topic for base in cfg.bases for topic in bridge_topics.subscriptions(base, cfg.share_group)]

    def _main(self, index: int, cfg: BrokerConfig) -> MqttLink:
        """Broker ``index``'s main connection: every topic of its bridges; it keeps off the node the events'
        standby is on when the broker has another (with two nodes, one death loses neither)."""
        def avoid() -> Endpoint | None:
            standby = self.standbys.get(index)
            return standby.endpoint if standby is not None and len(cfg.endpoints) > 2 else None

        return MqttLink(Endpoints(cfg.endpoints), client_settings(cfg), functools.partial(self._serve, index, cfg),
                        client_id=f"{self.client_prefix}-{self._tag}-{index}", log=log, label="broker",
                        subscriptions=Subscriptions(self._topics(cfg), cfg.subscribe_qos),
                        backoff=Backoff(BACKOFF_START, BACKOFF_MAX), avoid=avoid)

    def _standby(self, index: int, cfg: BrokerConfig) -> MqttLink:
        """Broker ``index``'s events' standby: a second connection, to a node the main one is not on, subscribed
        to the events only (QoS 0): when the main connection's node dies the events still come this way."""
        return MqttLink(Endpoints(cfg.endpoints, start=1), client_settings(cfg),
                        functools.partial(self._serve_standby, index, cfg),
                        client_id=f"{self.client_prefix}-{self._tag}-{index}-standby", log=log,
                        label="events' standby on broker",
                        subscriptions=Subscriptions([t for t in self._topics(cfg) if t.endswith("/events")], 0),
                        backoff=Backoff(BACKOFF_START, BACKOFF_START), avoid=lambda: self.links[index].endpoint)

    async def _serve(self, index: int, cfg: BrokerConfig, client: aiomqtt.Client, node: Endpoint) -> None:
        """Broker ``index``'s main connection, subscribed: ready, and every message to the hub until the
        connection fails (raised) or the task is cancelled."""
        self.ready[index].set()
        log.info("subscribed to %s on %s", ", ".join(cfg.bases), node.url)
        try:
            await self._hand_over(index, cfg, client)
        finally:
            self.ready[index].clear()

    async def _serve_standby(self, index: int, cfg: BrokerConfig, client: aiomqtt.Client, node: Endpoint) -> None:
        log.info("events' standby subscribed on %s", node.url)
        await self._hand_over(index, cfg, client)

    async def _hand_over(self, index: int, cfg: BrokerConfig, client: aiomqtt.Client) -> None:
        """Decode every message ``client`` receives and hand it to the hub until the connection fails."""
        def handle(topic: str, raw: bytes, retained: bool) -> None:
            msg = bridge_topics.parse(topic, raw, cfg.bases, retained)
            if msg is not None:
                self.hub.handle(msg, index)

        self._live.add(client)
        try:
            await hand_over(client, handle, log)
        finally:
            self._live.discard(client)
