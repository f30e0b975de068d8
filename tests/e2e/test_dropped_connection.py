"""A connection that drops while a publish waits for its PUBACK is left at once, not after the publish's timeout.

aiomqtt ends a client's pending publishes only when their own timeout runs out: a disconnection fails its
``disconnected`` future, not them. The bridge confirms events in order, so one event in flight when a broker
node died held the whole queue for :data:`~touchmove.mqtt.connection.REPLY_TIMEOUT_S` (a fresh-clone CI run on
a NATS cluster: events flowed again 10.01 s after a follower was killed; the bound is 2 s). Here a real Mosquitto
sits behind a proxy that can hold the broker's answers back and cut every connection through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from tests.e2e.helpers import Broker
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.config import MqttConfig
from touchmove.mqtt.brokers import Endpoint
from touchmove.mqtt.connection import REPLY_TIMEOUT_S

BASE = "hall-drop"
#: the bound on noticing a dropped connection and having the event acknowledged by the next node
BOUND_S = 2.0


@dataclass
class CuttingProxy:
    """Forwards to a broker; can hold the broker's answers back (``hold``) and cut every connection."""

    broker_port: int
    hold: bool = False
    held: int = 0
    clients: list[asyncio.StreamWriter] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.broker_port)
        self.clients.append(client_w)
        await asyncio.gather(self._pipe(client_r, broker_w, answers=False),
                             self._pipe(broker_r, client_w, answers=True))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, answers: bool) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await reader.read(65536):
                if answers and self.hold:
                    self.held += len(data)
                    continue
                writer.write(data)
                await writer.drain()
        writer.close()

    def cut(self) -> None:
        """Reset every connection to the clients and take no more (a node that died)."""
        assert self.server is not None
        self.server.close()
        for writer in self.clients:
            writer.transport.abort()


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


def test_a_publish_in_flight_does_not_hold_a_dropped_connection(broker: Broker) -> None:
    acked: list[int] = []

    async def main() -> tuple[float, int]:
        proxy = CuttingProxy(broker.port)
        port = await proxy.start()
        # the proxy is the first node; the broker itself the next (a cluster's surviving node)
        config = MqttConfig(port=port, fallbacks=(Endpoint("127.0.0.1", broker.port),), base_topic=BASE)
        bridge_link = BridgeLink(config, on_command=_nothing, on_acked=acked.append)
        task = asyncio.create_task(bridge_link.run())
        try:
            async with asyncio.timeout(20):
                while not bridge_link.commands_subscribed:
                    await asyncio.sleep(0.02)
                bridge_link.offer_event(f"{BASE}/boards/b1/events", b'{"seq":1}', 1)
                while 1 not in acked:
                    await asyncio.sleep(0.02)
            proxy.hold = True            # the broker's PUBACK of the next event never reaches the bridge
            bridge_link.offer_event(f"{BASE}/boards/b1/events", b'{"seq":2}', 2)
            async with asyncio.timeout(5):
                while not proxy.held:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            assert 2 not in acked
            proxy.cut()
            cut = time.monotonic()
            async with asyncio.timeout(REPLY_TIMEOUT_S + 10):
                while 2 not in acked:
                    await asyncio.sleep(0.02)
            assert bridge_link.link.endpoint is not None
            return time.monotonic() - cut, bridge_link.link.endpoint.port
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    took, port = asyncio.run(main())
    assert port == broker.port
    assert took < BOUND_S, f"the event was acknowledged {took:.2f} s after its connection dropped"
    assert acked == [1, 2]
