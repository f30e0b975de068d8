"""One MQTT link class (:class:`touchmove.mqtt.link.MqttLink`): the bridge's connections and the broadcaster's are
made of it, with what differs passed in; no second class of that name copies it."""

from __future__ import annotations

import ast
from pathlib import Path

import touchmove
import touchmove.bridge.mqtt_link
from tests.forwarding import class_forwards
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.broadcast.consumer import BridgeFeeds
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import MqttConfig
from touchmove.mqtt.brokers import Endpoint
from touchmove.mqtt.link import Backoff, MqttLink, payload_bytes

PACKAGE_DIR = Path(touchmove.__file__).parent


def classes_named(name: str) -> list[str]:
    """Return the modules of the package (its firmware aside) that define a class ``name``."""
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR)
        if relative.parts[0] == "firmware":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.ClassDef) and node.name == name for node in ast.walk(tree)):
            found.append(relative.as_posix())
    return found


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


def test_one_class_is_named_mqtt_link() -> None:
    assert classes_named("MqttLink") == ["mqtt/link.py"]


def test_the_bridge_and_the_broadcaster_connect_through_it() -> None:
    bridge = BridgeLink(MqttConfig(port=1, keepalive=7, protocol=5, username="hall-a"), on_command=_nothing,
                        window=16)
    assert isinstance(bridge.link, MqttLink)
    assert bridge.link.will is not None and bridge.link.will.topic == "touchmove/bridge/state"
    assert (bridge.link.settings.keepalive, bridge.link.settings.protocol, bridge.link.settings.max_inflight) == (
        7, 5, 16)
    assert bridge.link.client_id.startswith("touchmove-bridge-hall-a-")
    feeds = BridgeFeeds(None, [BrokerConfig(port=1, events_standby=True,  # type: ignore[arg-type]
                                            fallbacks=(Endpoint("127.0.0.1", 2, False),)),
                               BrokerConfig(port=3)])
    assert [type(link) for link in feeds.links] == [MqttLink, MqttLink] and list(feeds.standbys) == [0]
    assert isinstance(feeds.standbys[0], MqttLink) and feeds.standbys[0].will is None
    assert feeds.standbys[0].subscriptions.topics and all(
        topic.endswith("/events") for topic in feeds.standbys[0].subscriptions.topics)
    assert feeds.standbys[0].nodes.current.port == 2     # the standby starts on the other node
    assert feeds.links[0].client_id != feeds.links[1].client_id


def test_the_bridge_link_forwards_nothing_to_its_mqtt_link() -> None:
    """The events' connection is read where it is (``bridge_link.link.connected``, ``.endpoint``, ``.failovers``...):
    BridgeLink adds its queues and the commands' connection, and hands nothing on to its MqttLink."""
    found = class_forwards(Path(touchmove.bridge.mqtt_link.__file__), "BridgeLink", ["link"])
    assert found == {}, f"one-line forwards to the MQTT link: {sorted(found)}"


def test_the_pause_doubles_up_to_its_bound_and_starts_again_after_a_connection() -> None:
    backoff = Backoff(0.25, 1.0)
    assert [backoff.next() for _ in range(5)] == [0.25, 0.5, 1.0, 1.0, 1.0]
    backoff.reset()
    assert backoff.next() == 0.25


def test_a_payload_is_bytes_whatever_the_client_gave() -> None:
    assert [payload_bytes(p) for p in (b"a", bytearray(b"b"), "c", 4, None)] == [b"a", b"b", b"c", b"4", b""]
