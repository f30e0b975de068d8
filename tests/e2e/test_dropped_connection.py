"""A connection that drops while a publish waits for its PUBACK is left at once, not after the publish's timeout.

aiomqtt ends a client's pending publishes only when their own timeout runs out: a disconnection fails its
``disconnected`` future, not them. The bridge confirms events in order, so one event in flight when a broker
node died held the whole queue for :data:`~touchmove.mqtt.connection.REPLY_TIMEOUT_S` (a fresh-clone CI run on
a NATS cluster: events flowed again 10.01 s after a follower was killed; the bound is 2 s); an arbiter's command
sent by the broadcaster as its connection dropped was refused only after those 10 s. Here a real Mosquitto sits
behind a proxy that can hold the broker's answers back and cut every connection through it.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.helpers import Broker, CuttingProxy
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.consumer import BridgeFeeds
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt.brokers import Endpoint
from touchmove.mqtt.connection import REPLY_TIMEOUT_S

BASE = "hall-drop"
#: the bound on noticing a dropped connection and having the event acknowledged by the next node
BOUND_S = 2.0


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


class Hub:
    def handle(self, msg: BridgeMessage, broker: int = 0) -> None:
        return None


def test_an_arbiters_command_on_a_dropped_connection_is_refused_at_once(broker: Broker) -> None:
    async def main() -> tuple[float, str]:
        proxy = CuttingProxy(broker.port)
        port = await proxy.start()
        feeds = BridgeFeeds(Hub(), [BrokerConfig(port=port, bases=(BASE,))])    # type: ignore[arg-type]
        task = asyncio.create_task(feeds.run())
        try:
            await feeds.wait_ready(20)
            proxy.hold = True            # the command's PUBACK never reaches the broadcaster
            command = asyncio.create_task(feeds.publish(0, f"{BASE}/boards/b1/set", b'{"command":"new_game"}'))
            async with asyncio.timeout(5):
                while not proxy.held:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            assert not command.done()
            proxy.cut()
            cut = time.monotonic()
            with pytest.raises(ActionError) as refused:
                async with asyncio.timeout(REPLY_TIMEOUT_S + 5):
                    await command
            return time.monotonic() - cut, str(refused.value)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    took, said = asyncio.run(main())
    assert took < BOUND_S, f"the command was refused {took:.2f} s after its connection dropped ({said})"
    assert "dropped" in said and "try again" in said, said
