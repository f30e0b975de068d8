"""Revocation end to end: the real ``touchmove broadcast`` process (its tokens file outside the output directory,
``TOUCHMOVE_ARBITERS_FILE``), a real Mosquitto, a simulated bridge playing, a deputy's console stream opened with
the session cookie, and ``touchmove arbiters revoke`` run as a command: the deputy's stream ends within a second
and gets no move played after the revocation; his token is refused."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp
import aiomqtt

from tests.broadcast.broadcast_helpers import HOST, start_broadcaster, wait_seen
from touchmove.broadcast.arbiter_book import ARBITERS_FILE_ENV, file_entry
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker, free_port

SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]


def test_a_revoked_deputys_open_stream_ends(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_revoke(broker, tmp_path))


async def _revoke(broker: LocalBroker, tmp_path: Path) -> None:
    tokens = tmp_path / "etc" / "arbiters.toml"
    tokens.parent.mkdir()
    tokens.write_text(file_entry("Anna Chief", "chief", "tok-anna") + file_entry("Bob Deputy", "arbiter", "tok-bob"))
    cfg = tmp_path / "tournament.toml"
    cfg.write_text(f"""event = "Revoke Open"
site = "Here"
time_control = "600+5"
round = 1

[broadcast]
output_dir = "out"
delay_minutes = 15

[[brokers]]
url = "{broker.url}"

[[rounds]]
number = 1
[[rounds.boards]]
board_id = "r01"
white = "A"
black = "B"
""", encoding="utf-8")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "TOUCHMOVE_ARBITER_TOKEN": "", "PYTHONPATH": str(HOST), ARBITERS_FILE_ENV: str(tokens)}
    proc = await start_broadcaster(cfg, port, env=env)      # the revoke command below runs with the same
    plies: list[int] = []
    ended: list[float] = []
    try:
        jar = aiohttp.CookieJar(unsafe=True)  # the broadcaster is at an IP address
        async with aiomqtt.Client("127.0.0.1", broker.port) as client, aiohttp.ClientSession(cookie_jar=jar) as http:
            bridge = SimBridge(client)
            board = bridge.board("r01")
            await bridge.online()
            await wait_seen(http, port, proc, bridge.base)  # a start sent before it subscribed is lost to it
            await board.start()
            # the deputy's console: /api/auth gives the cookie, the stream goes with it (the console is private)
            async with http.post(f"{base}/api/auth", headers={"Authorization": "Bearer tok-bob"}) as resp:
                assert resp.status == 200
                cookie = resp.headers["Set-Cookie"]
            stream = await http.get(f"{base}/api/stream?svg=0")
            assert stream.status == 200

            async def read() -> None:
                kind = ""
                while line := await stream.content.readline():
                    text = line.decode().strip()
                    if text.startswith("event: "):
                        kind = text[7:]
                    elif text.startswith("data: ") and kind == "board":
                        plies.append(json.loads(text[6:])["ply"])
                ended.append(time.monotonic())

            reader = asyncio.create_task(read())
            for ply in range(1, 9):
                await board.move(SHUFFLE[(ply - 1) % 4])
                await asyncio.sleep(0.1)
            for _ in range(400):     # 20 s: the bridge and the console share two cores with the other tests
                if 8 in plies:
                    break
                await asyncio.sleep(0.05)
            assert 8 in plies, plies
            revoke = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "touchmove.cli", "arbiters", "revoke", str(tokens), "Bob Deputy",
                stdout=asyncio.subprocess.DEVNULL, env=env)
            assert await revoke.wait() == 0
            revoked_at = time.monotonic()
            for ply in range(9, 29):  # two seconds of play after the revocation
                await board.move(SHUFFLE[(ply - 1) % 4])
                await asyncio.sleep(0.1)
            await asyncio.wait({reader}, timeout=3)
            reader.cancel()
            stream.close()
            async with http.post(f"{base}/api/boards/1/result", json={"result": "1-0"},
                                 headers={"Authorization": "Bearer tok-bob"}) as resp:
                refused = resp.status
            await bridge.clear_retained()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
    assert max(plies) == 8, f"the revoked deputy's stream got plies played after the revocation: {plies}"
    assert ended and ended[0] - revoked_at < 1.0, "the revoked deputy's stream did not end within a second"
    assert refused == 401  # his token is refused (200 before, with the tokens file outside the output directory)
    assert "tok-bob" not in cookie  # the cookie holds no token
