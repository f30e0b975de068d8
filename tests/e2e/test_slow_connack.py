"""A broker whose every node answers CONNECT slowly still takes the bridge's and the broadcaster's connections.

A NATS cluster re-electing its JetStream leaders on a loaded machine holds each MQTT CONNECT until the sessions
stream answers. With a fixed 2 s CONNACK wait the links gave up on every node just before it answered, for as long
as the cluster stayed slow (a fresh-clone CI run: no event through 50 s after a node was killed). The wait now
doubles with each whole round of the nodes that failed. Here a real Mosquitto sits behind a proxy that holds every
connection's first answer (the CONNACK) for 3 s."""

from __future__ import annotations

import asyncio
import contextlib
import time

from tests.e2e.helpers import Broker
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.consumer import BridgeFeeds as ConsumerLink
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt.connection import CONNECT_TIMEOUT_S, connect_timeout

#: how long the proxy holds each connection's CONNACK: more than the first wait, less than the second
HOLD_S = 3.0
BASE = "hall-slow"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hold: float) -> None:
    first = True
    with contextlib.suppress(OSError, asyncio.CancelledError):
        while data := await reader.read(65536):
            if first:
                await asyncio.sleep(hold)
                first = False
            writer.write(data)
            await writer.drain()
    writer.close()


async def slow_proxy(broker_port: int) -> asyncio.Server:
    """Listen on a free port; forward to the broker, holding the broker's first bytes back :data:`HOLD_S`."""

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", broker_port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, broker_w, 0.0), _pipe(broker_r, client_w, HOLD_S))

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def test_the_connack_wait_doubles_with_each_round_that_failed() -> None:
    assert connect_timeout(0) == CONNECT_TIMEOUT_S < HOLD_S < connect_timeout(1)
    assert connect_timeout(1) < connect_timeout(2) == connect_timeout(50) == 8.0


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


class Hub:
    def __init__(self) -> None:
        self.arrived: list[BridgeMessage] = []

    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        self.arrived.append(msg)


def test_slow_connacks_on_every_node_still_connect(broker: Broker) -> None:
    acked: list[int] = []
    hub = Hub()

    async def main() -> float:
        proxy = await slow_proxy(broker.port)
        port = proxy.sockets[0].getsockname()[1]
        link = BridgeLink(MqttConfig(port=port, base_topic=BASE), on_command=_nothing, on_acked=acked.append,
                        backoff_max=0.5)
        reader = ConsumerLink(hub, [BrokerConfig(port=port, bases=(BASE,), subscribe_qos=0)])
        start = time.monotonic()
        tasks = [asyncio.create_task(link.run()), asyncio.create_task(reader.run())]
        try:
            await reader.wait_ready(30)
            link.offer_event(f"{BASE}/boards/b1/events", b'{"seq":1}', 1)
            async with asyncio.timeout(30):
                while 1 not in acked or not any(m.kind == "events" for m in hub.arrived):
                    await asyncio.sleep(0.05)
            return time.monotonic() - start
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            proxy.close()

    took = asyncio.run(main())
    # one round given up after CONNECT_TIMEOUT_S, the next waits long enough
    assert took > CONNECT_TIMEOUT_S
