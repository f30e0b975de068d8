"""The MQTT link against a real Mosquitto: the bounded queue, retained state republished after a reconnect,
the last will, and a demo run end to end."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.helpers import REPO, Broker, Subscriber, require_binary
from touchmove.bridge.mqtt_link import BridgeLink
from touchmove.config import MqttConfig


async def _nothing(topic: str, raw: bytes, retained: bool) -> None:
    return None


def test_bounded_queue_acks_and_retained_republish(broker: Broker) -> None:
    sub = Subscriber(broker.port)
    acked: list[int] = []

    async def main() -> None:
        bridge_link = BridgeLink(MqttConfig(port=broker.port, queue_size=5), on_command=_nothing, on_acked=acked.append,
                        backoff_max=0.5)
        accepted = [bridge_link.offer_event("touchmove/boards/b/events", b'{"seq":%d}' % i, i) for i in range(8)]
        assert accepted == [True] * 5 + [False] * 3 and bridge_link.room() == 0
        bridge_link.retain("touchmove/boards/b/state", b'{"ply":1}')
        task = asyncio.create_task(bridge_link.run())
        deadline = time.monotonic() + 10
        while len(acked) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert acked == [0, 1, 2, 3, 4] and bridge_link.room() == 5
        broker.stop()
        await asyncio.sleep(0.5)
        bridge_link.offer_event("touchmove/boards/b/events", b'{"seq":5}', 5)   # queued while the broker is away
        broker.start()
        deadline = time.monotonic() + 15
        while (5 not in acked or bridge_link.link.connects < 2) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert acked[-1] == 5 and bridge_link.link.connects >= 2
        await asyncio.sleep(0.5)
        task.cancel()

    try:
        asyncio.run(main())
        # a broker without persistence only has the retained state if the link published it again
        fresh = Subscriber(broker.port)
        try:
            fresh.wait_for(lambda: any(m.topic == "touchmove/boards/b/state" and m.retain for m in fresh.messages),
                           10, "the retained state republished after the restart")
        finally:
            fresh.close()
        states = [m for m in sub.messages if m.topic == "touchmove/bridge/state"]
        assert states and states[0].json() == {"state": "online"}
    finally:
        sub.close()


def test_last_will_says_offline(broker: Broker, tmp_path: Path) -> None:
    sub = Subscriber(broker.port)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:{broker.port}"\n[journal]\npath = "{tmp_path / "j.db"}"\n')
    daemon = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", str(cfg)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sub.wait_for(lambda: (m := sub.last("touchmove/bridge/state")) is not None
                     and m.json()["state"] == "online", 15, "online")
        daemon.kill()
        daemon.wait(5)
        sub.wait_for(lambda: (m := sub.last("touchmove/bridge/state")) is not None
                     and m.json()["state"] == "offline", 40, "the last will")
    finally:
        if daemon.poll() is None:
            daemon.kill()
        sub.close()


def test_demo_plays_the_opera_game(broker: Broker) -> None:
    require_binary("micropython", str(REPO / ".venv" / "bin" / "micropython"))
    sub = Subscriber(broker.port)
    try:
        out = subprocess.run([sys.executable, "-m", "touchmove.cli", "demo", "--no-ui", "--speed", "5",
                              "--broker", broker.url], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "17. Rd8#" in out.stdout and "1-0" in out.stdout
        ends = [e for e in sub.events() if e["type"] == "game_end"]
        assert ends and ends[0]["result"] == "1-0"
    finally:
        sub.close()


def test_demo_with_the_embedded_broker() -> None:
    require_binary("micropython", str(REPO / ".venv" / "bin" / "micropython"))
    out = subprocess.run([sys.executable, "-m", "touchmove.cli", "demo", "--no-ui", "--speed", "5",
                          "--embedded-broker"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '[White "Morphy, Paul"]' in out.stdout and "17. Rd8# 1-0" in out.stdout
