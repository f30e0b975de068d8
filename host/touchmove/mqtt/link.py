"""One MQTT link class for every service: a connection to one broker, kept up until cancelled.

:class:`MqttLink` connects to a broker's nodes in turn (:class:`~touchmove.mqtt.brokers.Endpoints`), subscribes,
then hands the client to what the service does with it (``serve``: the bridge's publishing, its commands, the
broadcaster's reading). When the connection fails the next node is tried at once; after a whole round of the
nodes failed, again after a pause (:class:`Backoff`). Each attempt has a client id of its own (``client_id`` and
the attempt's number): a NATS node holds a CONNECT for 11 s when the id's session belonged to a node that died, a
new id is answered at once. Each attempt runs through :func:`~touchmove.mqtt.connection.one_attempt`, so a
cancellation stops the link whatever the attempt made of it.

What differs between the services is passed in: the clients' settings (:class:`ClientSettings`), the last will,
the subscriptions, the pause, a node to keep away from (the other connection's, for a standby), and ``serve``.
The bridge's link (:mod:`touchmove.bridge.mqtt_link`) and the broadcaster's (:mod:`touchmove.broadcast.consumer`)
are made of these.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiomqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from touchmove.mqtt.brokers import Endpoint, Endpoints, tls_context
from touchmove.mqtt.connection import (
    CONNECT_TIMEOUT_S,
    connect_timeout,
    one_attempt,
    socket_options,
    subscribe_all,
)

#: What a service does with a connection once it is subscribed, until the connection fails (raised) or the task
#: is cancelled.
Serve = Callable[[aiomqtt.Client, Endpoint], Awaitable[None]]


@dataclass(frozen=True)
class ClientSettings:
    """What every client of one service is made with: credentials, TLS files, MQTT version, keepalive, and how
    many QoS 1 publishes may be in flight (``max_inflight``, None: the client's default) or queued while the
    connection is not up (``max_queued``)."""

    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    protocol: int = 4
    keepalive: int = 15
    max_inflight: int | None = None
    max_queued: int | None = None


def make_client(settings: ClientSettings, node: Endpoint, identifier: str, *, timeout: float = CONNECT_TIMEOUT_S,
                will: aiomqtt.Will | None = None) -> aiomqtt.Client:
    """Return a client for ``node`` with ``settings`` (auth, TLS when the node has it) and ``will``; ``timeout``:
    how long its CONNACK may take."""
    context = tls_context(settings.ca_file, settings.cert_file, settings.key_file) if node.tls else None
    client = aiomqtt.Client(
        node.host, node.port, username=settings.username, password=settings.password, identifier=identifier,
        protocol=aiomqtt.ProtocolVersion.V5 if settings.protocol == 5 else aiomqtt.ProtocolVersion.V311,
        will=will, tls_context=context, keepalive=settings.keepalive, timeout=timeout,
        max_inflight_messages=settings.max_inflight, max_queued_outgoing_messages=settings.max_queued,
        socket_options=socket_options(),
    )
    if settings.max_inflight is not None:
        # a window of QoS 1 publishes in flight is the normal case then, not a sign of trouble
        client.pending_calls_threshold = 4 * settings.max_inflight
    return client


def payload_bytes(payload: object) -> bytes:
    """Return a received message's payload as bytes (aiomqtt gives bytes, or text, a number or None)."""
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    return b"" if payload is None else str(payload).encode()


async def hand_over(client: aiomqtt.Client, handle: Callable[[str, bytes, bool], Awaitable[None] | None],
                    log: logging.Logger) -> None:
    """Give every message ``client`` receives to ``handle(topic, payload, retained)`` until the connection fails;
    a message ``handle`` fails on is logged and the next one taken."""
    async for message in client.messages:
        topic = str(message.topic)
        try:
            done = handle(topic, payload_bytes(message.payload), bool(message.retain))
            if done is not None:
                await done
        except Exception:  # one bad message must not stop the stream
            log.exception("message on %s could not be handled", topic)


@dataclass
class Backoff:
    """The pause after every node failed to answer: ``first``, doubled after each such round up to ``most``,
    ``first`` again once a connection got through."""

    first: float
    most: float
    now: float = field(init=False)

    def __post_init__(self) -> None:
        self.now = self.first

    def reset(self) -> None:
        self.now = self.first

    def next(self) -> float:
        """Return the pause to take now, and double the one after."""
        pause = self.now
        self.now = min(self.most, self.now * 2)
        return pause


@dataclass(frozen=True)
class Subscriptions:
    """The topic filters a connection subscribes to before it serves, at ``qos`` or with MQTT 5 ``options``."""

    topics: Sequence[str] = ()
    qos: int = 1
    options: SubscribeOptions | None = None


def _errors_said(errors: Sequence[BaseException]) -> str:
    return "; ".join(" ".join(str(e).split()) for e in errors)


class MqttLink:
    """A connection to one broker (its nodes tried in turn), subscribed and served, kept up until cancelled.

    ``label`` names it in the log (``"broker"``: ``broker mqtt://...: what went wrong``); ``say_problem`` turns a
    failed attempt's errors into that line; ``avoid`` names a node not to connect to when another is there (a
    standby's, or the main connection's); ``on_lost`` is called after each attempt that ended.
    """

    def __init__(self, nodes: Endpoints, settings: ClientSettings, serve: Serve, *, client_id: str,
                 log: logging.Logger, label: str = "broker", subscriptions: Subscriptions = Subscriptions(),
                 will: aiomqtt.Will | None = None, backoff: Backoff | None = None,
                 avoid: Callable[[], Endpoint | None] = lambda: None,
                 say_problem: Callable[[Sequence[BaseException]], str] = _errors_said,
                 on_lost: Callable[[], None] = lambda: None) -> None:
        self.nodes = nodes
        self.settings = settings
        self.client_id = client_id
        self.label = label
        self.subscriptions = subscriptions
        self.will = will
        self.backoff = backoff or Backoff(0.25, 10.0)
        self._serve = serve
        self._avoid = avoid
        self._say_problem = say_problem
        self._on_lost = on_lost
        self._log = log
        #: the client connected and subscribed, and its node (None while connecting)
        self.client: aiomqtt.Client | None = None
        self.endpoint: Endpoint | None = None
        self.connected = False
        self.attempts = 0
        self.connects = 0
        #: how many times the link moved to another node
        self.failovers = 0
        self._last_node: Endpoint | None = None

    def new_client(self, node: Endpoint, identifier: str, *, will: bool = True) -> aiomqtt.Client:
        """Return a client for ``node`` made as this link's are (``will``: with its last will, if it has one)."""
        return make_client(self.settings, node, identifier, timeout=connect_timeout(self.nodes.rounds_failed),
                           will=self.will if will else None)

    async def run(self) -> None:
        """Connect, subscribe, serve, and reconnect (to the next node at once, then after the pause) until
        cancelled."""
        while True:
            if self.nodes.current == self._avoid():
                self.nodes.failed()
            node = self.nodes.current
            self.attempts += 1
            try:
                await one_attempt(self._attempt(node, f"{self.client_id}-{self.attempts}"))
            except* (aiomqtt.MqttError, OSError) as group:
                self._log.warning("%s %s: %s", self.label, node.url, self._say_problem(group.exceptions))
            except* Exception:
                self._log.exception("MQTT link to %s failed", node.url)
            finally:
                self.client = None
                self.endpoint = None
                self.connected = False
                self._on_lost()
            if self.nodes.failed():
                pause = self.backoff.next()
                self._log.info("no node of %s %s answered; next try in %.1f s", self.label,
                               ", ".join(n.url for n in self.nodes.all), pause)
                await asyncio.sleep(pause)
            else:
                self._log.info("trying the next node, %s", self.nodes.current.url)

    async def _attempt(self, node: Endpoint, identifier: str) -> None:
        async with self.new_client(node, identifier) as client:
            subs = self.subscriptions
            await subscribe_all(client, subs.topics, subs.qos, options=subs.options)
            self.client = client
            self.endpoint = node
            self.connected = True
            self.connects += 1
            self.nodes.connected()
            self.backoff.reset()
            if self._last_node is not None and self._last_node != node:
                self.failovers += 1
            self._last_node = node
            await self._serve(client, node)

