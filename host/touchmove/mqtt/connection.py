"""What a connection to one broker node needs to fail over in seconds (the bridge's and the broadcaster's).

A node that dies is noticed at once when its process ends (the kernel resets the connection), within about
2 s when its machine goes silent (TCP user timeout and TCP keepalive, below the MQTT keepalive), and a node
that takes a connection but does not answer it is left after :data:`CONNECT_TIMEOUT_S`. A subscription the
broker refuses for now (on NATS: a JetStream consumer that cannot be created while a leader is elected) is
tried again on the same connection instead of dropping it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

import aiomqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from touchmove.mqtt.brokers import refused_subscription

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a CONNACK may take before the next node is tried. A NATS node whose JetStream is electing leaders
#: held a CONNECT for the client's default 10 s in a measurement while another node answered at once.
CONNECT_TIMEOUT_S = 2.0
#: The CONNACK wait doubles with each whole round of the nodes that failed, up to this: a cluster whose every
#: node is slow to answer (JetStream re-electing on a loaded machine: a CONNECT waits for the sessions stream)
#: still takes a connection, where a fixed 2 s would give up on each node just before it answers.
CONNECT_TIMEOUT_MAX_S = 8.0
#: How long a QoS 1 publish or a subscription may wait for the broker's answer on a connection that is alive.
REPLY_TIMEOUT_S = 10.0
#: The same right after a fail-over, until the first acknowledgement: a NATS node drops the QoS 1 publishes it
#: takes while JetStream elects a leader (measured: no PUBACK in 10 s), so another node is tried sooner.
FAILOVER_REPLY_TIMEOUT_S = 3.0
#: How long a refused subscription is tried again on the same connection before it is given up.
SUBSCRIBE_RETRY_S = 15.0
SUBSCRIBE_PAUSE_S = 0.25
#: A peer that leaves sent data unacknowledged this long is dead (a machine lost, a cable pulled).
TCP_USER_TIMEOUT_MS = 2000


async def one_attempt(attempt: Coroutine[Any, Any, T]) -> T:
    """Run one connection attempt as a task of its own; return what it returns or raise what it raises.

    A cancellation of the caller cancels the attempt, waits for it to end, and is raised whatever the attempt
    made of it. A reconnect loop runs each attempt through here because an attempt may turn a cancellation
    into an :class:`aiomqtt.MqttError` (aiomqtt's disconnect on the way out, Python 3.11's ``TaskGroup``
    beside a failing child), which the loop would take for a lost connection and try again for ever: a bridge
    or broadcaster asked to stop that never stops.
    """
    task = asyncio.ensure_future(attempt)
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()      # retrieved: the caller's cancellation is what counts now
        raise
    return task.result()


#: The logger aiomqtt gives its clients when none is passed (the bridge's and the broadcaster's).
AIOMQTT_LOGGER = "mqtt"


class LateAcknowledgement(logging.Filter):
    """Turns aiomqtt's traceback for an acknowledgement whose request had given up already (a SUBACK that came
    after its subscribe timed out, or was cancelled by a stop) into one warning line: nothing is lost (the
    subscription is tried again, or the process is stopping), and a command's output carries no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.msg, str) and record.msg.startswith("Unexpected message ID"):
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg += " (an answer after its request gave up: ignored)"
        return True


def tame_late_acknowledgements() -> None:
    """Install :class:`LateAcknowledgement` on aiomqtt's logger (once)."""
    logger = logging.getLogger(AIOMQTT_LOGGER)
    if not any(isinstance(f, LateAcknowledgement) for f in logger.filters):
        logger.addFilter(LateAcknowledgement())


def connect_timeout(rounds_failed: int) -> float:
    """Return how long a CONNACK may take after ``rounds_failed`` whole rounds of the nodes failed in a row."""
    return min(CONNECT_TIMEOUT_MAX_S, CONNECT_TIMEOUT_S * (1 << min(max(rounds_failed, 0), 8)))


def socket_options() -> list[tuple[int, int, int]]:
    """Return the TCP options of a broker connection: no Nagle delay for small QoS 1 messages, and a dead peer
    noticed within about 2 s whether data waits for it (``TCP_USER_TIMEOUT``) or the link is idle (keepalive)."""
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 1), ("TCP_KEEPINTVL", 1), ("TCP_KEEPCNT", 2),
                        ("TCP_USER_TIMEOUT", TCP_USER_TIMEOUT_MS)):
        if hasattr(socket, name):     # Linux; elsewhere the MQTT keepalive alone notices a silent peer
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


async def subscribe_all(client: aiomqtt.Client, topics: Iterable[str], qos: int, *,
                        options: SubscribeOptions | None = None, retry_for: float = SUBSCRIBE_RETRY_S) -> None:
    """Subscribe to every topic (with MQTT 5 ``options`` when given, else at ``qos``); return when all are
    granted. A refused subscription is tried again for ``retry_for`` seconds, then :class:`aiomqtt.MqttError`
    is raised (the caller moves to another node)."""
    loop = asyncio.get_running_loop()
    for topic in topics:
        deadline = loop.time() + retry_for
        while refused_subscription(await (
                client.subscribe(topic, options=options, timeout=REPLY_TIMEOUT_S) if options is not None
                else client.subscribe(topic, qos=qos, timeout=REPLY_TIMEOUT_S))):
            if loop.time() >= deadline:
                raise aiomqtt.MqttError(f"the broker refused the subscription {topic}")
            log.info("the broker refused the subscription %s for now; trying again", topic)
            await asyncio.sleep(SUBSCRIBE_PAUSE_S)
