"""The lichess push as an API client, against a local stand-in server (never lichess): Retry-After,
backoff with jitter, a refused token, per-game errors, a round split over several lichess rounds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import pytest
from aiohttp import web

from tests.broadcast.broadcast_helpers import read_games, tournament_data
from touchmove.broadcast.broadcaster import ActionError
from touchmove.broadcast.lichess_push import LichessPusher, PushState, TokenSource, retry_after
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import TournamentError, parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker

PGN = '[Event "x"]\n[Round "1.1"]\n[White "A"]\n[Black "B"]\n[Result "*"]\n\n1. e4 *\n'
Answer = Callable[[web.Request], web.Response]


class StandIn:
    """A lichess stand-in: each push gets the next scripted answer (the last one repeats)."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.calls: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def _push(self, request: web.Request) -> web.Response:
        self.calls.append({"round": request.match_info["id"], "auth": request.headers.get("Authorization"),
                           "agent": request.headers.get("User-Agent"), "body": await request.text()})
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        return answer(request)

    async def __aenter__(self) -> StandIn:
        app = web.Application()
        app.router.add_post("/api/broadcast/round/{id}/push", self._push)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


def ok(games: list[dict[str, Any]] | None = None) -> Answer:
    return lambda r: web.json_response({"games": games if games is not None else [{"tags": {}, "moves": 1}]})


def status(code: int, headers: dict[str, str] | None = None) -> Answer:
    return lambda r: web.json_response({"error": f"status {code}"}, status=code, headers=headers)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def make_pusher(url: str, token: str | TokenSource = "lip_ok", **kwargs: Any) -> LichessPusher:
    pusher = LichessPusher("AbCd1234", token, base_url=url, clock=FakeClock(), jitter=lambda: 1.0, **kwargs)
    pusher.update(PGN)
    return pusher


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_retry_after_is_honoured() -> None:
    async def go() -> None:
        async with StandIn([status(429, {"Retry-After": "60"}), ok()]) as lichess, aiohttp.ClientSession() as s:
            pusher = make_pusher(lichess.url)
            wait = await pusher.step(s)
            assert wait is not None and wait >= 60 and pusher.state is PushState.RETRYING
            assert pusher.status()["next_try"] is not None and "429" in (pusher.last_error or "")
            assert await pusher.step(s) == pusher.interval and pusher.state is PushState.OK
            assert len(lichess.calls) == 2
    run(go())
    assert retry_after("Wed, 21 Oct 2015 07:28:30 GMT", 1445412480.0) == 30.0
    assert retry_after("soon", 0.0) is None


def test_server_errors_back_off_exponentially_with_jitter() -> None:
    async def go() -> None:
        async with StandIn([status(500), status(502), status(503), ok()]) as lichess, \
                aiohttp.ClientSession() as s:
            draws = iter([1.0, 0.0, 0.5])
            pusher = LichessPusher("AbCd1234", "lip_ok", base_url=lichess.url, jitter=lambda: next(draws),
                                   backoff_start=2.0, backoff_max=300.0)
            pusher.update(PGN)
            waits = [await pusher.step(s) for _ in range(3)]
            assert waits == [2.0, 2.0, 6.0]  # base 2, 4, 8 times (0.5 + 0.5 * jitter)
            assert pusher.failures == 3 and await pusher.step(s) == pusher.interval
            assert pusher.state is PushState.OK and pusher._backoff == 2.0  # reset after a success
    run(go())


def test_network_errors_are_retried_with_backoff() -> None:
    async def go() -> None:
        async with aiohttp.ClientSession() as s:
            pusher = make_pusher("http://127.0.0.1:9", timeout=2.0)  # nothing listens on the discard port
            first = await pusher.step(s)
            second = await pusher.step(s)
            assert pusher.state is PushState.RETRYING and "network" in (pusher.last_error or "")
            assert first is not None and second is not None and second == 2 * first
    run(go())


def test_a_refused_token_stops_until_it_changes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    token_file = tmp_path / "lichess.token"
    token_file.write_text("lip_old\n")

    def answer(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer lip_new":
            return web.json_response({"error": "No such token"}, status=401)
        return web.json_response({"games": [{"tags": {}, "moves": 1}]})

    async def go() -> None:
        async with StandIn([answer]) as lichess, aiohttp.ClientSession() as s:
            pusher = make_pusher(lichess.url, TokenSource(None, token_file))
            await pusher.step(s)
            assert pusher.state is PushState.TOKEN_REFUSED and pusher.status()["state"] == "token refused"
            for _ in range(5):  # nothing is sent with the refused token
                await pusher.step(s)
            assert len(lichess.calls) == 1
            token_file.write_text("lip_new\n")
            await pusher.step(s)
            assert pusher.state is PushState.OK and [c["auth"] for c in lichess.calls] == \
                ["Bearer lip_old", "Bearer lip_new"]
            # 403 is a refusal too; a token given by the arbiter resumes
            pusher.update(PGN.replace("e4", "d4"))
            lichess.answers = [status(403)]
            await pusher.step(s)
            assert pusher.state is PushState.TOKEN_REFUSED
            lichess.answers = [ok()]
            pusher.set_token("lip_arbiter")
            await pusher.step(s)
            assert pusher.state is PushState.OK and lichess.calls[-1]["auth"] == "Bearer lip_arbiter"
    with caplog.at_level(logging.ERROR):
        run(go())
    assert sum("token refused" in r.getMessage() for r in caplog.records) == 2  # said once per refusal


def test_per_game_errors_of_a_200_are_logged_and_shown(caplog: pytest.LogCaptureFixture) -> None:
    games = [{"tags": {"Round": "1.1", "White": "A", "Black": "B"}, "moves": 12},
             {"tags": {"Round": "1.2", "White": "C", "Black": "D"}, "error": "Invalid PGN: illegal move"}]

    async def go() -> None:
        async with StandIn([ok(games)]) as lichess, aiohttp.ClientSession() as s:
            pusher = make_pusher(lichess.url)
            await pusher.step(s)
            pusher.update(PGN.replace("e4", "d4"))
            await pusher.step(s)
            errors = pusher.status()["game_errors"]
            assert errors == [{"index": 2, "round": "1.2", "white": "C", "black": "D",
                               "error": "Invalid PGN: illegal move"}]
    with caplog.at_level(logging.WARNING):
        run(go())
    assert sum("Invalid PGN" in r.getMessage() for r in caplog.records) == 1  # logged once, shown always


def test_a_round_is_split_over_lichess_rounds(broker: LocalBroker, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        async with StandIn([ok()]) as lichess:
            data = tournament_data(5, port=broker.port, out=tmp_path)
            data["broadcast"].update(lichess_url=lichess.url, lichess_interval=0.1, lichess_max_games=3)
            data["rounds"][0]["lichess"] = [{"boards": "1-3", "round_id": "first123"},
                                            {"boards": "4-5", "round_id": "second45"}]
            monkeypatch.setenv("LICHESS_TOKEN", "lip_ok")
            t = parse_tournament(data)
            async with BroadcastService(t, port=0, svg_workers=0) as svc, \
                    aiomqtt.Client("127.0.0.1", broker.port) as client:
                bridge = SimBridge(client)
                for board_id in ("b01", "b05"):
                    board = bridge.board(board_id)
                    await board.start()
                    await board.move("e2e4")
                for _ in range(200):
                    rounds = {c["round"] for c in lichess.calls if "1. e4" in c["body"]}
                    if rounds == {"first123", "second45"}:
                        break
                    await asyncio.sleep(0.05)
                last = {c["round"]: c["body"] for c in lichess.calls}
                boards = {rid: [g.headers["Board"] for g in read_games(body, check=False)]
                          for rid, body in last.items()}
                assert boards == {"first123": ["1", "2", "3"], "second45": ["4", "5"]}
                assert all(c["agent"].startswith("touchmove/") for c in lichess.calls)
                # a further game allowed later must not take a lichess round over its limit silently
                with pytest.raises(ActionError, match="lichess round first123 would get 4 games"):
                    svc.hub.actions.permit_game(2, "next")
                assert svc.hub.storage.by_number[2].games.allow is None
                svc.hub.actions.permit_game(5, "next")  # second45: 3 games, within the limit
                with pytest.raises(ActionError, match="second45 would get 4 games"):
                    svc.hub.actions.permit_game(4, "next")
                async with aiohttp.ClientSession() as http, http.get(f"{svc.url}/status.json") as resp:
                    push = (await resp.json())["push"]
                assert [(p["round_id"], p["boards"]) for p in push["targets"]] == \
                    [("first123", "1-3"), ("second45", "4-5")]
                # a new token from the dashboard (arbiter token needed)
                async with aiohttp.ClientSession() as http:
                    url = f"{svc.url}/api/lichess/token"
                    async with http.post(url, json={"token": "lip_new"}) as resp:
                        assert resp.status == 401
                    auth = {"Authorization": "Bearer s3cret"}
                    async with http.post(url, json={"token": "two words"}, headers=auth) as resp:
                        assert resp.status == 400
                    async with http.post(url, json={"token": "lip_new"}, headers=auth) as resp:
                        assert resp.status == 200
                assert all(p.token == "lip_new" for p in svc.pusher.pushers)
    run(go())


def test_lichess_round_naming_several_rounds_spreads_the_boards(broker: LocalBroker, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36, item 8: lichess keeps 100 games a round; an Olympiad-sized round names several lichess
    rounds ("Open I", "Open II", ...): boards in board order, 100 a round at most, each pushed its own."""
    data = tournament_data(250, port=broker.port, out=tmp_path)
    data["rounds"][0]["lichess_round"] = ["openOne1", "openTwo2", "openThree3"]
    t = parse_tournament(data)
    assert [(x.round_id, x.boards) for x in t.lichess_targets()] == [
        ("openOne1", range(1, 101)), ("openTwo2", range(101, 201)), ("openThree3", range(201, 251))]
    data["rounds"][0]["lichess_round"] = ["openOne1", "openTwo2"]
    with pytest.raises(TournamentError) as info:
        parse_tournament(data)
    assert "250 boards, above lichess's 100 per round, need 3 lichess rounds" in str(info.value)
    assert "\n" not in str(info.value)
    data["rounds"][0].pop("lichess_round")
    data["broadcast"]["lichess_round"] = "openOne1"  # one lichess round for 250 boards: refused, saying how
    with pytest.raises(TournamentError) as refused:
        parse_tournament(data)
    assert 'lichess_round = ["openOne1", ...] with 3 round ids' in str(refused.value)

    async def go() -> None:
        async with StandIn([ok()]) as lichess:
            data["broadcast"].update(lichess_round=["openOne1", "openTwo2", "openThree3"], lichess_url=lichess.url,
                                     lichess_interval=0.1)
            monkeypatch.setenv("LICHESS_TOKEN", "lip_ok")
            async with BroadcastService(parse_tournament(data), port=0, svg_workers=0) as svc, \
                    aiomqtt.Client("127.0.0.1", broker.port) as client:
                bridge = SimBridge(client)
                for board_id in ("b100", "b101", "b250"):
                    board = bridge.board(board_id)
                    await board.start()
                    await board.move("e2e4")
                want = {"openOne1": 100, "openTwo2": 100, "openThree3": 50}
                for _ in range(300):
                    last = {c["round"]: c["body"] for c in lichess.calls}
                    if set(last) == set(want) and all(b.count("1. e4") == 1 for b in last.values()):
                        break
                    await asyncio.sleep(0.05)
                boards = {rid: [int(g.headers["Board"]) for g in read_games(body, check=False)]
                          for rid, body in last.items()}
                assert {rid: len(b) for rid, b in boards.items()} == want
                assert boards["openTwo2"] == list(range(101, 201)) and boards["openThree3"][-1] == 250
                assert svc.pusher is not None
    run(go())
