"""The LiveChess-Cloud-shaped JSON as its readers expect it, and an illegal move that never stalls the push."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
from pathlib import Path
from typing import Any

import aiomqtt
import chess.pgn
import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.broadcast.broadcast_helpers import tournament_data
from tests.broadcast.test_broadcast_lichess import StandIn, ok
from tests.broadcast.test_broadcast_mqtt import wait_for
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.server import make_app
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker

T0 = dt.datetime(2026, 11, 29, 15, 0, 7, 250000, tzinfo=dt.UTC)


def _feed(hub: Broadcaster, board_id: str, events: list[dict[str, Any]], session: str = "s1") -> None:
    for seq, e in enumerate(events, 1):
        hub.handle(BridgeMessage("touchmove", board_id, "events", {**e, "board": board_id, "seq": seq,
                                                                    "session": session}))


def _game(ucis: list[str], clocks: list[int], number: int = 1) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "game_start", "game": number}]
    for ply, (uci, ms) in enumerate(zip(ucis, clocks, strict=True), 1):
        ts = (T0 + dt.timedelta(seconds=30 * ply)).isoformat().replace("+00:00", "Z")
        out.append({"type": "move", "game": number, "ply": ply, "uci": uci, "ts": ts})
        out.append({"type": "clock", "game": number, "ply": ply, "remaining": ms, "ts": ts})
    return out


def test_livechess_json_as_its_readers_expect_it(tmp_path: Path) -> None:
    asyncio.run(_livechess(tmp_path))


async def _livechess(tmp_path: Path) -> None:
    hub = Broadcaster(parse_tournament(tournament_data(3, out=tmp_path))).open()  # time control 180+2
    _feed(hub, "b01", [*_game(["f2f3", "e7e5", "g2g4", "d8h4"], [175_000, 170_000, 160_000, 169_000]),
                       {"type": "game_end", "game": 1, "result": "0-1", "reason": "checkmate"}])
    _feed(hub, "b03", _game(["d2d4"], [179_000]))
    async with TestClient(TestServer(make_app(hub, "s3cret"))) as client:
        tournament = await (await client.get("/live/tournament.json")).json()
        again = await (await client.get("/live/tournament.json")).json()
        assert tournament["id"] == again["id"] and len(tournament["id"]) == 36
        other = parse_tournament({**tournament_data(1, out=tmp_path), "event": "Another Open"})
        assert Broadcaster(other).open().storage.tournament.event != hub.storage.tournament.event
        mate = await (await client.get("/live/round-3/game-1.json")).json()
        first_ms = int((T0 + dt.timedelta(seconds=30)).timestamp() * 1000)
        assert mate["firstMove"] == first_ms and mate["result"] == "BLACKWIN"
        assert mate["clock"] is None  # a finished game runs no clock
        # clock after the move + seconds it took: 180 + 2 - 175 = 7, 180 + 2 - 170 = 12, 175 + 2 - 160 = 17
        assert mate["moves"] == ["f3 175+7", "e5 170+12", "g4 160+17", "Qh4# 169+3"]
        live = await (await client.get("/live/round-3/game-3.json")).json()
        assert live["clock"] == {"white": 179, "black": None, "run": "black", "time": live["firstMove"]}
        assert live["live"] and type(live["firstMove"]) is int  # the clocks were read at the (first) move
        fresh = await (await client.get("/live/round-3/game-2.json")).json()
        assert fresh["firstMove"] is None and fresh["moves"] == []
        # a further game allowed on board 1: the games numbered before keep their numbers
        before = (await (await client.get("/live/round-3/index.json")).json())["pairings"]
        hub.actions.permit_game(1, "next")
        _feed(hub, "b01", _game(["e2e4"], [178_000], number=2), session="s1b")
        after = (await (await client.get("/live/round-3/index.json")).json())["pairings"]
        assert after[:3] == before and len(after) == 4 and after[3]["board"] == 1
        third = await (await client.get("/live/round-3/game-3.json")).json()
        assert third["serialNr"] == "b03" and third["moves"] == ["d4 179+3"]
        added = await (await client.get("/live/round-3/game-4.json")).json()
        assert added["serialNr"] == "b01" and added["moves"] == ["e4 178+4"]


def test_an_illegal_move_never_stalls_the_pushed_round(broker: LocalBroker, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(_illegal(broker, tmp_path, monkeypatch))


async def _illegal(broker: LocalBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with StandIn([ok()]) as lichess:
        data = tournament_data(2, port=broker.port, out=tmp_path)
        data["broadcast"].update(lichess_round="AbCd1234", lichess_url=lichess.url, lichess_interval=0.1)
        monkeypatch.setenv("LICHESS_TOKEN", "lip_ok")
        async with BroadcastService(parse_tournament(data), port=0, svg_workers=0) as svc, \
                aiomqtt.Client("127.0.0.1", broker.port) as client:
            bridge = SimBridge(client, publish_pgn=False)
            one, two = bridge.board("b01"), bridge.board("b02")
            await one.start()
            await two.start()
            await one.move("e2e4")
            # a move the game cannot have (a bridge fault): never in a pushed PGN, the arbiter sees it first
            await one.event({"type": "move", "game": 1, "ply": 2, "uci": "e2e4", "san": "e4"})
            await wait_for(lambda: any(a.code == "illegal_move" for a in svc.hub.storage.alerts), what="the alert")
            alert = next(a for a in svc.hub.storage.alerts if a.code == "illegal_move")
            assert alert.board == 1 and alert.detail["uci"] == "e2e4" and alert.ply == 2
            for uci in ("d2d4", "d7d5", "c2c4"):  # play goes on elsewhere: the push follows it
                await two.move(uci)
            await wait_for(lambda: any("3. c4" in c["body"].replace("\n", " ") or "2. c4" in c["body"]
                                       for c in lichess.calls), what="board 2's moves pushed")
            for call in lichess.calls:
                stream = io.StringIO(call["body"])
                while (game := chess.pgn.read_game(stream)) is not None:
                    assert not game.errors
            await bridge.clear_retained()
