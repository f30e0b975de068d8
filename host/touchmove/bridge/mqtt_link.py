"""The bridge's MQTT side: its connections (:class:`touchmove.mqtt.link.MqttLink`), with a bounded outgoing queue.

Three kinds of outgoing message, sent in this order of priority:

* events (QoS 1, not retained), in order per board, acknowledged back to the bridge once the broker has them
  (``on_acked(tag)``) so the journal can mark them published. The queue is bounded (``queue_size``); when it
  is full :meth:`BridgeLink.offer_event` refuses and the bridge leaves the event in the journal, to be offered
  again when :meth:`BridgeLink.room` says there is space;
* replies to commands (a small bounded queue, oldest dropped);
* retained topics (``bridge/state``, ``boards/<id>/state`` ...), coalesced: only the latest payload of each
  topic is kept, and after every (re)connect all of them are published again.

Commands arrive on ``<base>/boards/+/set`` and ``<base>/bridge/request/+`` (a connection of their own, see
below) and go to ``on_command``.

Several broker URLs (the nodes of a cluster) are tried in turn: when the connected node goes away the next
one is tried at once; events not acknowledged are sent again there (consumers drop repeats by ``seq``).
Publishing starts as soon as the node sends its CONNACK. Commands come in on a second connection to the same
node: on NATS a QoS 1 subscription is a JetStream consumer, which a cluster electing leaders refuses after
holding the connection for up to 4 s, and the events' connection must not wait for that. A fail-over so holds
the events back for about a second (see :mod:`touchmove.mqtt.connection`).
Each connection attempt has a client id of its own (:mod:`touchmove.mqtt.link`). A stale connection left on a
cut-off node then ends with the last will (``offline``) instead of a takeover, so ``bridge/state`` is published
again two keepalives after each connect.

After a restart the bridge may ask to read retained topics back (:meth:`BridgeLink.read_back`: its own, as it left
them before it was killed): that is done once, on the first connection that gets through it, before anything is
published there, and takes at most :data:`READ_BACK_S`. While no broker answers nothing waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiomqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from touchmove.bridge.event_paths import EventPaths
from touchmove.config import MqttConfig
from touchmove.mqtt.brokers import Endpoint, Endpoints, refused_subscription
from touchmove.mqtt.connection import FAILOVER_REPLY_TIMEOUT_S, REPLY_TIMEOUT_S
from touchmove.mqtt.link import Backoff, ClientSettings, MqttLink, Subscriptions, hand_over
from touchmove.mqtt.wire import bridge_topic, command_filters

log = logging.getLogger(__name__)

Payload = bytes | Callable[[], bytes]

#: the first pause after every node failed to answer (doubled each round, up to ``backoff_max``)
RETRY_FIRST_S = 0.25
#: the longest pause between attempts of the commands' connection to the node the events' connection is on
COMMANDS_RETRY_MAX_S = 1.0

#: The longest a read-back of retained topics (:meth:`BridgeLink.read_back`) holds a connection's publishing.
READ_BACK_S = 2.0

ONLINE = b'{"state":"online"}'
OFFLINE = b'{"state":"offline"}'


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def client_id(config: MqttConfig) -> str:
    """Return this process's MQTT client id: the configured ``client_id`` (a prefix, default
    ``touchmove-bridge``), the user name, and 16 random hex digits.

    Unique per process: two bridges given one configuration never take each other's session (the broker drops
    the older connection of a client id), and nobody can guess the id to push the bridge off.
    """
    parts = [config.client_id or "touchmove-bridge"]
    if config.username:
        parts.append(config.username)
    parts.append(uuid.uuid4().hex[:16])
    return "-".join(parts)


@dataclass
class ReadBack:
    """Retained topics to read once (``wanted``, under the filter ``topics``) and who gets what was found."""

    topics: str
    wanted: frozenset[str]
    on_read: Callable[[dict[str, bytes]], None]


@dataclass
class Outgoing:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    tag: Any = None


def broker_problem(errors: Sequence[BaseException]) -> str:
    """Return what the operator reads when a broker node could not be used: a refused or unknown address as
    ``unreachable`` with the fix, anything else as the client said it."""
    text = "; ".join(" ".join(str(e).split()) for e in errors)
    if any(isinstance(e, ConnectionRefusedError) for e in errors) or "Connection refused" in text:
        return ("is unreachable (connection refused: no broker listens there) -> start Mosquitto (sudo apt-get "
                "install mosquitto) or fix [mqtt] url; `touchmove doctor --config bridge.toml` checks it")
    if "Name or service not known" in text or "Temporary failure in name resolution" in text:
        return f"is unreachable (the host name is not known: {text}) -> fix [mqtt] url"
    if "timed out" in text.lower():
        return f"is unreachable (no answer: {text}) -> check the network and the firewall to the broker"
    return text

class BridgeLink:
    """The bridge's side of the broker: its queues, and the connections that send them and bring commands in.
    Run :meth:`run` as a task; publish from the same event loop."""

    def __init__(self, config: MqttConfig, *,
                 on_command: Callable[[str, bytes, bool], Awaitable[None]],
                 on_acked: Callable[[Any], None] | None = None,
                 on_connected: Callable[[], None] | None = None,
                 window: int = 64, backoff_max: float = 10.0) -> None:
        self.config = config
        self.base = config.base_topic
        self._on_command = on_command
        self._on_acked = on_acked or (lambda tag: None)
        self._on_connected = on_connected or (lambda: None)
        self._events: deque[Outgoing] = deque()
        self._replies: deque[Outgoing] = deque(maxlen=256)
        self._retained: dict[str, Payload] = {}
        self._dirty: dict[str, None] = {}          # ordered set of retained topics to (re)send
        self._wake = asyncio.Event()
        self._window = window
        self.client_id = client_id(config)
        #: the events' connection (the publishing, the last will); commands come in on a connection of their own
        #: to the same node (:meth:`_commands_link`)
        self.link = MqttLink(
            Endpoints(config.endpoints),
            ClientSettings(config.username, config.password, config.ca_file, config.cert_file, config.key_file,
                           config.protocol, config.keepalive, max_inflight=window),
            self._session, client_id=self.client_id, log=log,
            will=aiomqtt.Will(bridge_topic(self.base, "state"), OFFLINE, qos=1, retain=True),
            backoff=Backoff(RETRY_FIRST_S, backoff_max), say_problem=broker_problem, on_lost=self._lost)
        self._commands: MqttLink | None = None
        self._announced = False          # bridge/state online sent since the events' connection came up
        #: a connection was lost and no publish has been acknowledged since: a node that does not answer
        #: within FAILOVER_REPLY_TIMEOUT_S then is left for the next (NATS drops the QoS 1 publishes it takes
        #: while JetStream elects a leader; they would wait the whole REPLY_TIMEOUT_S)
        self.recovering = False
        self._read_back: ReadBack | None = None
        #: ``events_qos = 0``: the events' own QoS 0 connections (a primary and a standby), else None
        self.event_paths: EventPaths | None = None
        if config.events_qos == 0:
            self.event_paths = EventPaths(config.endpoints, self.link.settings, self.client_id, self._on_acked)

    @property
    def commands_subscribed(self) -> bool:
        """Whether the commands' connection has its subscriptions now."""
        return self._commands is not None and self._commands.connected

    # -- publishing (from the event loop) -----------------------------------------------------------------
    def room(self) -> int:
        """How many more events the queue takes now."""
        return max(0, self.config.queue_size - len(self._events) - len(self.event_paths or ()))

    def offer_event(self, topic: str, payload: bytes, tag: Any) -> bool:
        """Queue an event (QoS 1, or QoS 0 on the events' own paths); return False, queuing nothing, when the queue
        is full."""
        if self.room() <= 0:
            return False
        if self.event_paths is not None:
            self.event_paths.offer(topic, payload, tag)
            return True
        self._events.append(Outgoing(topic, payload, 1, False, tag))
        self._wake.set()
        return True

    def reply(self, topic: str, payload: dict[str, Any]) -> None:
        self._replies.append(Outgoing(topic, dumps(payload), 1, False))
        self._wake.set()

    def retain(self, topic: str, payload: Payload) -> None:
        """Set a retained topic (a payload or a function computing it when it is sent)."""
        self._retained[topic] = payload
        self._dirty[topic] = None
        self._wake.set()

    def retained_topics(self) -> set[str]:
        """Return the topics this link holds a retained payload for."""
        return set(self._retained)

    def pending(self) -> int:
        return len(self._events) + len(self.event_paths or ()) + len(self._replies) + len(self._dirty)

    def read_back(self, topics: str, wanted: set[str], on_read: Callable[[dict[str, bytes]], None]) -> None:
        """Read the retained payloads of the ``wanted`` topics (under the filter ``topics``) at the next connection,
        before anything is published on it; ``on_read`` gets those found within :data:`READ_BACK_S` (topic ->
        payload; none when the broker refuses the subscription). Done once: a connection lost meanwhile leaves it
        to the next."""
        self._read_back = ReadBack(topics, frozenset(wanted), on_read)

    # -- connection ---------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Connect, serve, and reconnect (to the next node at once, then with backoff) until cancelled; with
        ``events_qos = 0`` the events' paths besides."""
        if self.event_paths is None:
            await self.link.run()
            return
        async with asyncio.TaskGroup() as group:
            group.create_task(self.event_paths.run())
            group.create_task(self.link.run())

    def _lost(self) -> None:
        self.recovering = True

    async def _session(self, client: aiomqtt.Client, node: Endpoint) -> None:
        """Publish, receive commands and restate ``bridge/state`` on the events' connection to ``node`` until it
        fails (raised) or the task is cancelled."""
        log.info("connected to %s", node.url)
        for topic in list(self._retained):
            self._dirty[topic] = None
        read_back = self._read_back
        if read_back is not None:
            found = await self._read_retained(client, read_back)
            self._read_back = None
            read_back.on_read(found)
        self._announced = False
        self._commands = self._commands_link(node)
        async with asyncio.TaskGroup() as group:
            group.create_task(self._send_loop(client))
            group.create_task(self._commands.run())
            group.create_task(self._state_again(2 * self.config.keepalive))
            group.create_task(self._until_dropped(client))

    @staticmethod
    async def _until_dropped(client: aiomqtt.Client) -> None:
        """Raise :class:`aiomqtt.MqttError` as soon as ``client``'s connection drops. aiomqtt ends a dropped
        client's message iteration at once but leaves its pending publishes to their own timeouts, and events are
        confirmed in order: one in flight when a node died held the queue for ``REPLY_TIMEOUT_S`` (10 s)."""
        async for _ in client.messages:
            pass     # nothing is subscribed on this connection (a read-back's late retained message, dropped)
        raise aiomqtt.MqttError("the connection ended")

    async def _read_retained(self, client: aiomqtt.Client, read_back: ReadBack) -> dict[str, bytes]:
        """Return the retained payloads of ``read_back.wanted`` that ``client`` receives within :data:`READ_BACK_S`
        of subscribing to ``read_back.topics`` (QoS 0: no JetStream consumer on NATS); unsubscribe after."""
        found: dict[str, bytes] = {}
        try:
            async with asyncio.timeout(READ_BACK_S):
                granted = await client.subscribe(read_back.topics, qos=0)
                if refused_subscription(granted):
                    log.warning("the broker refused the read-back of %s (the bridge's user needs read access to "
                                "it: touchmove broker-auth)", read_back.topics)
                    return found
                async for message in client.messages:
                    topic = str(message.topic)
                    payload = message.payload
                    if message.retain and topic in read_back.wanted and isinstance(payload, bytes | bytearray):
                        found[topic] = bytes(payload)
                        if len(found) == len(read_back.wanted):
                            break
        except TimeoutError:
            log.info("read back %d of %d retained topics under %s within %.1f s", len(found), len(read_back.wanted),
                     read_back.topics, READ_BACK_S)
        await client.unsubscribe(read_back.topics, timeout=REPLY_TIMEOUT_S)
        return found

    async def _state_again(self, after: float) -> None:
        """Publish ``bridge/state`` again ``after`` seconds from now: over the last will of an earlier connection
        that a broker cut off from us only notices now (it has another client id, so no takeover ends it)."""
        await asyncio.sleep(after)
        topic = bridge_topic(self.base, "state")
        if topic in self._retained:
            self._dirty[topic] = None
            self._wake.set()

    def _commands_link(self, node: Endpoint) -> MqttLink:
        """Return the commands' connection to ``node``, the node the events' connection is on. On NATS a QoS 1
        subscription is a JetStream consumer, and while a leader is elected its creation holds every later packet
        of its connection for up to 4 s: the events' connection never waits for it. A broken one is tried again
        soon, on the same node (it answers the events' connection)."""
        return MqttLink(Endpoints([node]), self.link.settings, self._command_session,
                        client_id=f"{self.client_id}-{self.link.attempts}-commands", log=log,
                        label="the commands' connection to",
                        subscriptions=Subscriptions(command_filters(self.base), 1, self._options()),
                        backoff=Backoff(RETRY_FIRST_S, COMMANDS_RETRY_MAX_S))

    async def _command_session(self, client: aiomqtt.Client, node: Endpoint) -> None:
        """Hand each command the commands' connection receives to ``on_command`` until the connection fails
        (raised) or the task is cancelled."""
        if not self._announced:
            # online (and the bridge's own state) once commands are heard, as before the split
            self._announced = True
            self.retain(bridge_topic(self.base, "state"), ONLINE)
            self._on_connected()
        await hand_over(client, self._on_command, log)

    def _options(self) -> SubscribeOptions | None:
        """MQTT 5: commands keep their retain flag when delivered live (retain as published), so a retained command
        is seen as one and ignored; MQTT 3.1.1 clears the flag on live delivery (docs/mqtt.md)."""
        return SubscribeOptions(qos=1, retainAsPublished=True) if self.config.protocol == 5 else None

    def _take_one(self) -> Outgoing | None:
        """The next message to send: events first, then replies, then retained topics (built now)."""
        if self._events:
            return self._events.popleft()
        if self._replies:
            return self._replies.popleft()
        while self._dirty:
            topic = next(iter(self._dirty))
            del self._dirty[topic]
            payload = self._retained[topic]
            try:
                body = payload() if callable(payload) else payload
            except Exception:
                log.exception("cannot build the payload of %s", topic)
                continue
            return Outgoing(topic, body, 1, True)
        return None

    def _has_work(self) -> bool:
        return bool(self._events or self._replies or self._dirty)

    def _put_back(self, unsent: list[Outgoing]) -> None:
        """Return messages whose delivery is not confirmed to the front of their queues, in order."""
        self._events.extendleft(reversed([m for m in unsent if m.tag is not None]))
        for m in unsent:
            if m.retain and m.topic not in self._dirty:
                self._dirty[m.topic] = None

    async def _send_loop(self, client: aiomqtt.Client) -> None:
        """Keep up to ``window`` QoS 1 publishes in flight; confirm them in order as the broker acks them."""
        inflight: deque[tuple[Outgoing, asyncio.Future[None]]] = deque()

        def wake(_: object) -> None:
            self._wake.set()

        try:
            while True:
                while inflight and inflight[0][1].done():
                    message, fut = inflight.popleft()
                    error = fut.exception()
                    if error is not None:
                        inflight.appendleft((message, fut))
                        raise error if isinstance(error, aiomqtt.MqttError) else aiomqtt.MqttError(
                            f"publish failed: {error!r}")
                    self.recovering = False
                    if message.tag is not None:
                        self._on_acked(message.tag)
                built = 0
                while len(inflight) < self._window and built < 4:
                    nxt = self._take_one()
                    if nxt is None:
                        break
                    built += nxt.retain    # retained payloads (state, PGN) are built now: a few at a time
                    fut = asyncio.ensure_future(client.publish(nxt.topic, nxt.payload, qos=nxt.qos,
                                                               retain=nxt.retain, timeout=self._reply_timeout()))
                    fut.add_done_callback(wake)
                    inflight.append((nxt, fut))
                if built >= 4:
                    await asyncio.sleep(0)     # let the serial side and the settle timers run in between
                    continue
                self._wake.clear()
                if (inflight and inflight[0][1].done()) or (len(inflight) < self._window and self._has_work()):
                    continue
                await self._wake.wait()
        except BaseException:
            for _, fut in inflight:
                if not fut.done():
                    fut.cancel()
                elif not fut.cancelled():
                    fut.exception()      # retrieved: the message is sent again anyway
            self._put_back([m for m, _ in inflight])
            raise

    def _reply_timeout(self) -> float:
        """Return how long a publish may wait for its acknowledgement now."""
        return FAILOVER_REPLY_TIMEOUT_S if self.recovering else REPLY_TIMEOUT_S

    async def close(self, final: list[tuple[str, bytes]] | None = None) -> None:
        """Publish ``final`` retained messages (e.g. offline states) if connected, then disconnect."""
        client = self.link.client
        if client is None:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2):
                for topic, payload in final or []:
                    await client.publish(topic, payload, qos=1, retain=True)
