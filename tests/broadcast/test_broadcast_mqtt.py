"""The broadcaster against a real Mosquitto (the test's own), fed by simulated bridges."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import chess
import chess.pgn
import pytest
from aiohttp import web

from tests.broadcast.broadcast_helpers import REQUIRE_ALL, read_games, tournament_data
from touchmove.broadcast import service
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import Tournament, parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
    return time.monotonic() - start


def ucis(game: chess.pgn.Game) -> list[str]:
    return [m.uci() for m in game.mainline_moves()]


def test_live_round_through_mosquitto(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_live_round(broker, tmp_path))


async def _live_round(broker: LocalBroker, tmp_path: Path) -> None:
    t = parse_tournament(tournament_data(3, port=broker.port, out=tmp_path))
    commands: list[dict[str, Any]] = []
    async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client:
        pgn_file = svc.hub.outputs.pgn_path
        await client.subscribe("touchmove/boards/+/set", qos=1)

        async def collect() -> None:
            async for message in client.messages:
                if str(message.topic).endswith("/set"):
                    commands.append({"topic": str(message.topic), **json.loads(bytes(message.payload))})

        collector = asyncio.create_task(collect())
        bridge = SimBridge(client)
        await bridge.online()
        b1, b2 = bridge.board("b01"), bridge.board("b02")
        await b1.start()
        await b2.start()
        for i, uci in enumerate(["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]):
            await b1.move(uci, remaining_ms=180_000 - 2000 * i)
            # each move is in the PGN file within a second
            n = i + 1
            delay = await wait_for(lambda n=n: len(ucis(read_games(pgn_file.read_text())[0])) == n, 1.0,
                                   f"ply {n} in the file")
            assert delay < 1.0
        await b1.takeback(5)
        await b1.move("f1c4", remaining_ms=171_000)
        for uci in ["d2d4", "d7d5", "c2c4"]:
            await b2.move(uci)
        await b2.amend("c1f4")  # the bridge replaces ply 3
        await b2.alert("touch_move", "4.3.1", {"square": "g1"})
        await wait_for(lambda: len(svc.hub.storage.alerts) == 1, what="the alert")
        await b1.kings_to_centre("1/2-1/2")  # d4 + d5: e4 and e5 are taken
        first = svc.hub.storage.by_number[1].game
        await wait_for(lambda: first.results.effective() == "1/2-1/2", what="kings result")
        await wait_for(lambda: svc.hub.outputs.written_version == svc.hub.storage.version, what="the write")

        async with aiohttp.ClientSession() as http:
            async with http.get(svc.pgn_url) as resp:
                assert resp.status == 200 and resp.content_type == "application/x-chess-pgn"
                served = await resp.text()
                etag = resp.headers["ETag"]
            assert served == pgn_file.read_text()
            async with http.get(svc.pgn_url, headers={"If-None-Match": etag}) as resp:
                assert resp.status == 304  # unchanged: pollers get no body
            games = read_games(served)
            assert [g.headers["Round"] for g in games] == ["3.1", "3.2", "3.3"]
            assert ucis(games[0]) == ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4"]
            assert games[0].headers["Result"] == "1/2-1/2" and games[0].end().clock() == 171.0
            assert ucis(games[1]) == ["d2d4", "d7d5", "c1f4"]
            assert games[2].headers["Result"] == "*" and not ucis(games[2])
            # actions: refused without the token, published with it
            async with http.post(f"{svc.url}/api/boards/2/promote", json={"piece": "n"}) as resp:
                assert resp.status == 401
            auth = {"Authorization": "Bearer s3cret"}
            api = f"{svc.url}/api/boards"
            async with http.post(f"{api}/2/promote", json={"piece": "n"}, headers=auth) as resp:
                assert resp.status == 200, await resp.text()
            async with http.post(f"{api}/2/takeback", json={"ply": 2}, headers=auth) as resp:
                assert resp.status == 200
            async with http.post(f"{api}/2/takeback", json={"ply": 9}, headers=auth) as resp:
                assert resp.status == 400
            async with http.post(f"{api}/3/result", json={"result": "0-1"}, headers=auth) as resp:
                assert resp.status == 200
            async with http.post(f"{svc.url}/api/alerts/1/ack", headers=auth) as resp:
                assert resp.status == 200 and (await resp.json())["acked"]
            await wait_for(lambda: len(commands) == 2, what="the commands")
            assert commands[0]["topic"] == "touchmove/boards/b02/set"
            assert commands[0]["command"] == "promote" and commands[0]["piece"] == "n"
            assert commands[1]["command"] == "takeback" and commands[1]["ply"] == 2
            await wait_for(lambda: '[Result "0-1"]' in pgn_file.read_text(), what="the arbiter's result")
            async with http.get(f"{svc.url}/board/1.svg") as resp:
                assert resp.status == 200 and "<svg" in await resp.text()
        collector.cancel()
        await asyncio.gather(collector, return_exceptions=True)
        await bridge.clear_retained()


def test_broadcaster_started_mid_game_resyncs_from_retained_pgn(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_mid_game(broker, tmp_path))


async def _mid_game(broker: LocalBroker, tmp_path: Path) -> None:
    t = parse_tournament(tournament_data(1, port=broker.port, out=tmp_path))
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        bridge = SimBridge(client)
        board = bridge.board("b01")
        await board.start()
        for uci in ["c2c4", "e7e5", "b1c3"]:
            await board.move(uci, remaining_ms=60_000)
        # a broadcaster first started after its round began takes the games the bridges show (else they
        # are held: the round starts clean, see test_broadcast_round_identity.py)
        async with BroadcastService(t, port=0, take_retained=True) as svc:
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 3, what="the retained PGN")
            await board.move("g8f6")
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 4, what="the next move")
            # a lost event: the next one shows a gap, the retained PGN fills it
            board.seq += 1
            board.position.push_uci("g2g3")
            board.clocks.append(None)
            await board.move("d7d5")
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 6, what="the resync")
            assert [m.uci for m in svc.hub.storage.by_number[1].game.moves][-2:] == ["g2g3", "d7d5"]


def test_lichess_push_to_a_stand_in(broker: LocalBroker, tmp_path: Path, monkeypatch: Any) -> None:
    asyncio.run(_lichess(broker, tmp_path, monkeypatch))


async def _lichess(broker: LocalBroker, tmp_path: Path, monkeypatch: Any) -> None:
    received: list[dict[str, Any]] = []

    async def push(request: web.Request) -> web.Response:
        received.append({"method": request.method, "path": request.path,
                         "auth": request.headers.get("Authorization"),
                         "type": request.content_type, "body": await request.text()})
        if request.headers.get("Authorization") != "Bearer lip_test":
            return web.json_response({"error": "unauthorized"}, status=401)
        return web.json_response({"games": [{"moves": 1}]})

    stand_in = web.Application()
    stand_in.router.add_post("/api/broadcast/round/{id}/push", push)
    runner = web.AppRunner(stand_in)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    data = tournament_data(2, port=broker.port, out=tmp_path)
    data["broadcast"].update(lichess_round="AbCd1234", lichess_url=f"http://127.0.0.1:{port}",
                             lichess_interval=0.2)
    monkeypatch.setenv("LICHESS_TOKEN", "lip_test")
    t = parse_tournament(data)
    try:
        async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client:
            board = SimBridge(client).board("b02")
            await board.start()
            await board.move("e2e4")
            await wait_for(lambda: any("1. e4" in r["body"] for r in received), what="the push")
            last = next(r for r in received if "1. e4" in r["body"])
            assert last["method"] == "POST" and last["path"] == "/api/broadcast/round/AbCd1234/push"
            assert last["auth"] == "Bearer lip_test" and last["type"] == "text/plain"
            assert [g.headers["Round"] for g in read_games(last["body"])] == ["3.1", "3.2"]
            assert svc.pusher is not None and svc.pusher.pushers[0].failures == 0
            async with aiohttp.ClientSession() as http, http.get(f"{svc.url}/status.json") as resp:
                push = (await resp.json())["push"]
            assert push["state"] == "ok" and push["targets"][0]["round_id"] == "AbCd1234"
            assert push["targets"][0]["last_success"] is not None
    finally:
        await runner.cleanup()


def test_two_brokers_and_a_broker_restart(tmp_path: Path) -> None:
    """Bridges on two brokers feed one broadcaster; commands go back to the right broker; after a broker
    restart the broadcaster reconnects and the game goes on."""
    if not LocalBroker.available():
        if REQUIRE_ALL:
            pytest.fail("mosquitto is not installed (TOUCHMOVE_REQUIRE_ALL=1)")
        pytest.skip("mosquitto is not installed: `make system-deps`")
    with LocalBroker() as one, LocalBroker() as two:
        asyncio.run(_two_brokers(tmp_path, one, two))


async def _two_brokers(tmp_path: Path, one: LocalBroker, two: LocalBroker) -> None:
    data = tournament_data(2, port=one.port, out=tmp_path)
    data["brokers"] = [{"url": one.url, "bases": ["hall-a"]}, {"url": two.url, "bases": ["hall-b"]}]
    t = parse_tournament(data)
    got: list[str] = []
    async with BroadcastService(t, port=0) as svc:
        async with aiomqtt.Client("127.0.0.1", one.port) as ca, aiomqtt.Client("127.0.0.1", two.port) as cb:
            await cb.subscribe("hall-b/boards/+/set", qos=1)
            a, b = SimBridge(ca, "hall-a").board("b01"), SimBridge(cb, "hall-b").board("b02")
            await a.start()
            await b.start()
            await a.move("e2e4")
            await b.move("d2d4")
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 1
                           and svc.hub.storage.by_number[2].game.ply == 1, what="both halls")
            await svc.hub.actions.promote(2, "r")

            async def first() -> None:
                async for message in cb.messages:
                    got.append(str(message.topic))
                    return

            await asyncio.wait_for(first(), 5)
            assert got == ["hall-b/boards/b02/set"]
        # hall A's broker restarts (same port, nothing kept): the broadcaster reconnects
        one.stop()
        await asyncio.sleep(0.3)
        one.start()
        await asyncio.wait_for(svc.link.ready[0].wait(), 15)
        async with aiomqtt.Client("127.0.0.1", one.port) as ca:
            a.bridge.client = ca
            await a.move("e7e5")
            await wait_for(lambda: svc.hub.storage.by_number[1].game.ply == 2, 5, "the move after the restart")


def _assigning(boards: int, broker: LocalBroker, tmp_path: Path) -> Tournament:
    """Return a tournament of ``boards`` boards on ``broker`` whose broadcaster assigns the pairings."""
    data = tournament_data(boards, port=broker.port, out=tmp_path)
    data["broadcast"]["assign"] = True
    return parse_tournament(data)


def test_pairings_are_assigned_to_the_bridges(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_assign(broker, tmp_path))


async def _assign(broker: LocalBroker, tmp_path: Path) -> None:
    t = _assigning(2, broker, tmp_path)
    got: list[dict[str, Any]] = []
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe("touchmove/boards/+/set", qos=1)
        async with BroadcastService(t, port=0):

            async def two() -> None:
                async for message in client.messages:
                    got.append({"topic": str(message.topic), **json.loads(bytes(message.payload))})
                    if len(got) == 2:
                        return

            await asyncio.wait_for(two(), 10)
    assert [g["topic"] for g in got] == ["touchmove/boards/b01/set", "touchmove/boards/b02/set"]
    assert got[1]["command"] == "assign" and got[1]["round"] == "3" and got[1]["board"] == "2"
    assert got[1]["white"] == "White, Player 2" and got[1]["black"] == "Black, Player 2"


def test_an_assignment_the_bridge_did_not_answer_is_sent_again_until_it_does(broker: LocalBroker,
                                                                            tmp_path: Path) -> None:
    # A bridge says its board is online before its command subscription is made: the first assign reaches no one
    # (the club guide's export once lacked the names). The broadcaster sends it again until the bridge answers.
    asyncio.run(_assign_again(broker, tmp_path))


async def _assign_again(broker: LocalBroker, tmp_path: Path) -> None:
    t = _assigning(1, broker, tmp_path)
    got: list[dict[str, Any]] = []
    async with aiomqtt.Client("127.0.0.1", broker.port) as bridge:
        await bridge.publish("touchmove/boards/b01/availability", b"online", qos=1, retain=True)
        async with BroadcastService(t, port=0) as svc:
            await wait_for(lambda: svc.hub.storage.by_number[1].online is True, 10, "the board online")
            await bridge.subscribe("touchmove/boards/+/set", qos=1)     # late: the first assigns are lost

            async def answered_on_the_second() -> None:
                async for message in bridge.messages:
                    command = json.loads(bytes(message.payload))
                    got.append(command)
                    if len(got) == 2:
                        await bridge.publish("touchmove/boards/b01/response", json.dumps(
                            {"status": "ok", "command": "assign", "transaction": command["transaction"]}), qos=1)
                        return

            await asyncio.wait_for(answered_on_the_second(), 20)
            await asyncio.sleep(2 * service.ASSIGN_AGAIN_S)
            assert (3, 1) in svc._assigned
        await bridge.publish("touchmove/boards/b01/availability", b"", qos=1, retain=True)
    assert len(got) == 2 and all(c["command"] == "assign" and c["white"] == "White, Player 1" for c in got)
