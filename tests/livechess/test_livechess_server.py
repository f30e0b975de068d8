"""The LiveChess-compatible server against a real Mosquitto and a real bridge (in-process, fed board lines): the
board list (websocket and HTTP) with LiveChess's JSON types, feeds with ``san`` from the game (a takeback
shortens it), ``setup`` through the bridge's command (a journaled ``setup`` record), ``flip``, errors that keep
the connection open."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import chess
from aiohttp.test_utils import TestClient, TestServer

from tests.host.test_bridge import FakeLink, hello, line
from touchmove.bridge import Bridge
from touchmove.broadcast.tournament import BrokerConfig
from touchmove.config import BridgeConfig, MqttConfig, SerialConfig
from touchmove.livechess.server import LiveChessServer
from touchmove.sim.local_broker import LocalBroker

START = "ffff00000000ffff"
AFTER_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR"


@dataclass
class Rig:
    bridge: Bridge
    link: FakeLink
    server: LiveChessServer
    http: TestClient[Any, Any]
    seq: int = 0
    t: int = 0

    def lines(self, *changes: tuple[str, str]) -> None:
        """Lift/place changes on the board, 300 ms apart (the bridge's settle time is 50 ms)."""
        out = []
        for kind, sq in changes:
            self.seq += 1
            self.t += 300
            out.append(line(self.seq, self.t, kind, sq=sq))
        self.bridge.ports.handle_lines(self.link, out)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def rig(tmp: Path, broker: LocalBroker) -> AsyncIterator[Rig]:
    cfg = BridgeConfig(MqttConfig(port=broker.port), SerialConfig(), settle_ms=50, journal=str(tmp / "j.sqlite3"))
    bridge = Bridge(cfg, session="lc")
    running = asyncio.create_task(bridge.run())
    link = FakeLink()
    server = LiveChessServer([BrokerConfig(port=broker.port)], port=0)
    following = asyncio.create_task(server.mqtt.run())
    http = TestClient(TestServer(server.app))
    await http.start_server()
    r = Rig(bridge, link, server, http, seq=1, t=10)
    try:
        await server.mqtt.wait_ready()
        bridge.ports.handle_lines(link, [hello(0, 5), line(1, 10, "snapshot", occ=START)])  # type: ignore[arg-type]
        await until(lambda: "brd" in server.eboards.boards and server.eboards.boards["brd"].online)
        yield r
    finally:
        await http.close()
        following.cancel()
        bridge.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await running


async def until(check: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.02)


async def receive(ws: aiohttp.ClientWebSocketResponse, timeout: float = 10.0) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await ws.receive_str(timeout=timeout))
    return message


async def answer_to(ws: aiohttp.ClientWebSocketResponse, call_id: int) -> dict[str, Any]:
    """The answer to call ``call_id``; the feeds before it must not carry ``san`` (the game is not set up yet)."""
    while True:
        message = await receive(ws)
        if message["response"] != "feed":
            assert message["id"] == call_id, message
            return message
        assert "san" not in message["param"], message


async def feed_with(ws: aiohttp.ClientWebSocketResponse, san: list[str]) -> dict[str, Any]:
    """The next feed whose ``san`` is ``san`` (feeds of clock and sync changes before it are skipped)."""
    while True:
        message = await receive(ws)
        if message["response"] == "feed" and message["param"].get("san") == san:
            return message


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_board_list_has_livechess_s_fields_and_types(tmp_path: Path, broker: LocalBroker) -> None:
    async def main() -> None:
        async with rig(tmp_path, broker) as r:
            r.lines(("lift", "e2"), ("place", "e4"))
            await until(lambda: r.server.eboards.boards["brd"].san() == ["e4"])
            ws = await r.http.ws_connect("/api/v1.0")
            await ws.send_str('{"id":1,"call":"eboards"}')
            answer = await receive(ws)
            assert answer["response"] == "call" and answer["id"] == 1 and type(answer["time"]) is int
            assert answer["param"] == [{"serialnr": "brd", "source": "mqtt:touchmove", "state": "ACTIVE",
                                        "battery": "100%", "comment": None, "board": AFTER_E4, "flipped": False,
                                        "clock": None}]
            async with r.http.get("/api/v1.0/eboards") as resp:
                assert resp.status == 200 and await resp.json() == answer["param"]
            async with r.http.get("/api/v1.0") as resp:       # not a websocket: a clear answer, no crash
                assert resp.status == 400 and "eboards" in (await resp.json())["param"]["message"]
            await ws.close()
    run(main())


def test_setup_goes_through_the_bridge_and_feeds_follow_moves_and_a_takeback(
        tmp_path: Path, broker: LocalBroker) -> None:
    async def main() -> None:
        async with rig(tmp_path, broker) as r:
            ws = await r.http.ws_connect("/api/v1.0")
            await ws.send_str('{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,'
                              '"param":{"serialnr":"brd"}}}')
            assert (await receive(ws))["param"] is None
            first = await receive(ws)
            assert first["response"] == "feed" and first["id"] == 1
            assert first["param"] == {"serialnr": "brd", "flipped": False, "board": chess.STARTING_BOARD_FEN,
                                      "clock": None}        # no san before a setup, as LiveChess
            await ws.send_str(json.dumps({"id": 3, "call": "call", "param": {
                "id": 1, "method": "setup", "param": {"fen": chess.STARTING_FEN}}}))
            answer = await answer_to(ws, 3)
            assert answer == {"response": "call", "id": 3, "param": None, "time": answer["time"]}
            feed = await feed_with(ws, [])
            assert feed["param"]["start"] == chess.STARTING_FEN and feed["param"]["match"] is True
            r.lines(("lift", "e2"), ("place", "e4"))
            assert (await feed_with(ws, ["e4"]))["param"]["board"] == AFTER_E4
            r.lines(("lift", "e7"), ("place", "e5"))
            await feed_with(ws, ["e4", "e5"])
            r.lines(("lift", "e5"), ("place", "e7"))          # the reply taken back on the board
            assert (await feed_with(ws, ["e4"]))["param"]["board"] == AFTER_E4
            r.lines(("lift", "d7"), ("place", "d5"))
            await feed_with(ws, ["e4", "d5"])
            await ws.close()
        with sqlite3.connect(tmp_path / "j.sqlite3") as db:
            setups = [(json.loads(body), source) for body, source in db.execute(
                "SELECT body, source FROM entries WHERE kind = 'record'") if '"setup"' in body]
        assert [(rec["type"], rec["fen"], source) for rec, source in setups] == [
            ("setup", chess.STARTING_FEN, "operator")]
    run(main())


def test_bad_messages_get_livechess_s_error_and_the_connection_stays(tmp_path: Path, broker: LocalBroker) -> None:
    async def main() -> None:
        async with rig(tmp_path, broker) as r:
            ws = await r.http.ws_connect("/api/v1.0")
            bad = [
                ("not json", None, "not JSON"),
                ("[1,2]", None, "JSON object"),
                ('{"id":7,"call":"dance"}', 7, "unknown call"),
                ('{"id":8,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"nope"}}}',
                 8, "no eboard"),
                ('{"id":9,"call":"subscribe","param":{"feed":"other","id":1,"param":{"serialnr":"brd"}}}',
                 9, "unknown feed"),
                ('{"id":10,"call":"call","param":{"id":5,"method":"setup","param":{"fen":"x"}}}', 10,
                 "subscribe first"),
                ('{"id":11,"call":"unsubscribe","param":{"id":5}}', 11, "no feed"),
            ]
            await ws.send_bytes(b'{"id":6,"call":"eboards"}')
            answer = await receive(ws)
            assert answer["response"] == "error" and "JSON text" in answer["param"]["message"]
            for text, call_id, words in bad:
                await ws.send_str(text)
                answer = await receive(ws)
                assert answer["response"] == "error" and answer["id"] == call_id, answer
                assert words in answer["param"]["message"] and type(answer["time"]) is int
            await ws.send_str('{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,'
                              '"param":{"serialnr":"brd"}}}')
            await receive(ws)
            await receive(ws)
            for param, words in ((json.dumps({"id": 1, "method": "setup", "param": {"fen": "8/8 w"}}), "not a FEN"),
                                 (json.dumps({"id": 1, "method": "flip", "param": {"flip": 1}}), "flip"),
                                 (json.dumps({"id": 1, "method": "spin"}), "unknown method")):
                await ws.send_str(f'{{"id":12,"call":"call","param":{param}}}')
                answer = await receive(ws)
                assert answer["response"] == "error" and words in answer["param"]["message"], answer
            await ws.send_str('{"id":13,"call":"call","param":{"id":1,"method":"flip","param":{"flip":true}}}')
            assert (await receive(ws))["param"] is None
            assert (await receive(ws))["param"]["flipped"] is True
            await ws.send_str('{"id":1,"call":"eboards"}')
            assert (await receive(ws))["param"][0]["flipped"] is True
            await ws.send_str('{"id":14,"call":"unsubscribe","param":{"id":1}}')
            assert (await receive(ws))["param"] is None
            assert not ws.closed
            await ws.close()
    run(main())


def test_two_clients_on_one_board_both_get_its_feeds(tmp_path: Path, broker: LocalBroker) -> None:
    async def main() -> None:
        async with rig(tmp_path, broker) as r:
            sockets = [await r.http.ws_connect("/api/v1.0") for _ in range(2)]
            for feed_id, ws in enumerate(sockets, 1):
                await ws.send_str(json.dumps({"id": 2, "call": "subscribe", "param": {
                    "feed": "eboardevent", "id": feed_id, "param": {"serialnr": "brd"}}}))
                await receive(ws)
                await receive(ws)
            await sockets[0].send_str(json.dumps({"id": 3, "call": "call", "param": {
                "id": 1, "method": "setup", "param": {"fen": chess.STARTING_FEN}}}))
            await answer_to(sockets[0], 3)
            r.lines(("lift", "e2"), ("place", "e4"))
            for feed_id, ws in enumerate(sockets, 1):
                assert (await feed_with(ws, ["e4"]))["id"] == feed_id
                await ws.close()
    run(main())
