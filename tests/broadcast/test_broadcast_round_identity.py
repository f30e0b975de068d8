"""A round starts clean (issue 36, item 1): nothing the broker retains from another round or event enters a
round's outputs.

Through the real bridge and Mosquitto: boards finish (or leave unfinished) their games of "round 2", the
bridge's retained PGN and state keep them; a broadcaster then opened on round 3 for the first time, and one
of another event on the same broker, must show none of them in the round PGN, the CSV, the TRF, the
LiveChess JSON or the PGN the lichess push sends; they are held for the arbiter, and the next game started
on a board is the round's game.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import chess
import chess.pgn

from tests.broadcast.broadcast_helpers import Hall, read_games, until
from tests.broadcast.test_broadcast_e2e_bridge import SCHOLAR, _cleared_and_set_up, _occupancy
from tests.e2e.helpers import simple_timeline
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament

UNFINISHED = ["d2d4", "d7d5", "c2c4", "e7e6"]
NEXT_GAME = ["g1f3", "g8f6"]
#: Device milliseconds between the end of the earlier round's game and the board set up again (speed 4).
PAUSE_MS = 48_000


def _earlier_then_next(ucis: list[str], *, set_up_again: bool) -> list[dict[str, Any]]:
    """An earlier round's game, a long pause (the next round is opened then), then (maybe) the board cleared,
    set up and two plies of a new game."""
    recs = simple_timeline([chess.Move.from_uci(u) for u in ucis], think=300, hand=100)
    if set_up_again:
        cleared, t = _cleared_and_set_up(_occupancy(recs), recs[-1]["t"] + PAUSE_MS)
        recs += cleared
        recs += simple_timeline([chess.Move.from_uci(u) for u in NEXT_GAME], t0=t, think=300, hand=100)
    return recs


def test_a_round_opened_after_another_shows_none_of_its_games(tmp_path: Path) -> None:
    with Hall(tmp_path) as hall:
        asyncio.run(_round_identity(tmp_path, hall))


async def _retained_pgns(port: int, boards: list[str], done: Callable[[dict[str, str]], bool],
                         timeout: float) -> dict[str, str]:
    """The bridge's retained PGNs of ``boards`` once ``done`` says they are there."""
    seen: dict[str, str] = {}
    async with aiomqtt.Client("127.0.0.1", port) as client:
        for board in boards:
            await client.subscribe(f"touchmove/boards/{board}/pgn")
        async with asyncio.timeout(timeout):
            async for msg in client.messages:
                seen[str(msg.topic).split("/")[2]] = bytes(msg.payload).decode()  # type: ignore[arg-type]
                if done(seen):
                    return seen
    raise AssertionError("unreachable")


async def _round_identity(tmp_path: Path, hall: Hall) -> None:
    for ucis, again in ((SCHOLAR, True), (UNFINISHED, False)):
        hall.plug(_earlier_then_next(ucis, set_up_again=again))
    hall.start_bridge("j")
    tail = lambda: hall.log_tail("j")  # noqa: E731

    def plies(text: str) -> int:
        game = chess.pgn.read_game(io.StringIO(text))
        return 0 if game is None else len(list(game.mainline_moves()))

    def earlier_games_retained(seen: dict[str, str]) -> bool:
        return ('[Result "1-0"]' in seen.get("fake1", "") and plies(seen["fake1"]) == len(SCHOLAR)
                and plies(seen.get("fake2", "")) == len(UNFINISHED))

    for board in hall.boards:
        board.start()
    await _retained_pgns(hall.port, ["fake1", "fake2"], earlier_games_retained, 40)
    round3 = hall.tournament_data(2, out=tmp_path / "round3")
    other = hall.tournament_data(2, out=tmp_path / "other", round_number=1)
    other["event"] = "Another Cup"
    async with BroadcastService(parse_tournament(round3), port=0, svg_workers=0) as svc, \
            BroadcastService(parse_tournament(other), port=0, svg_workers=0) as svc_other:
        for service in (svc, svc_other):
            hub = service.hub
            await until(lambda h=hub: all(v.bridge_pgn and plies(v.bridge_pgn) in (4, 7)  # type: ignore[misc]
                                          for v in h.storage.by_number.values()),
                        10, "the bridge's retained PGNs", tail)
            await asyncio.sleep(0.3)  # what the retained messages start is taken in
            await until(lambda h=hub: h.outputs.written_version == h.storage.version, 5, "written", tail)  # type: ignore[misc]
            await _nothing_public(service, round_number=hub.storage.round.number)
            # held for the arbiter, who sees where they come from
            state = hub.storage.by_number[1].to_json()
            assert state["held"]["before_round"] is True and state["held"]["result"] == "1-0"
            assert hub.storage.by_number[2].to_json()["held"]["ply"] == len(UNFINISHED)
        # board 2's arbiter enters the round's result: nothing from before contradicts it
        async with aiohttp.ClientSession() as http, http.post(
                f"{svc.url}/api/boards/2/result", json={"result": "0-1"},
                headers={"Authorization": "Bearer s3cret"}) as resp:
            assert resp.status == 200
        # board 1 set up again: its new game is the round's
        hub = svc.hub
        await until(lambda: hub.storage.by_number[1].game.ply == len(NEXT_GAME), 40, "the round's game", tail)
        assert hub.storage.by_number[1].games.held is None
        await until(lambda: hub.outputs.written_version == hub.storage.version, 5, "written", tail)
        games = read_games(hub.outputs.pgn_path.read_text())
        assert [[m.uci() for m in g.mainline_moves()] for g in games] == [NEXT_GAME, []]
        assert [g.headers["Result"] for g in games] == ["*", "0-1"]
        assert hub.outputs.public_pgn() == hub.outputs.pgn_path.read_text()
    csv_rows = (tmp_path / "round3" / "round-3-results.csv").read_text().splitlines()[1:]
    assert [row.split(",")[-3] for row in csv_rows] == ["*", "0-1"]


async def _nothing_public(svc: BroadcastService, round_number: int) -> None:
    """Every output of the round (files and HTTP) shows two games with no move and no result."""
    hub = svc.hub
    out = hub.storage.output_dir
    async with aiohttp.ClientSession() as http:
        async def get(path: str) -> str:
            async with http.get(f"{svc.url}{path}") as resp:
                assert resp.status == 200, path
                return await resp.text()

        served = await get(f"/round/{round_number}.pgn")
        games = read_games(served)
        assert [list(g.mainline_moves()) for g in games] == [[], []], served
        assert [g.headers["Result"] for g in games] == ["*", "*"]
        assert served == hub.outputs.pgn_path.read_text() == hub.outputs.public_pgn()
        csv = await get(f"/round/{round_number}/results.csv")
        assert [row.split(",")[-3] for row in csv.splitlines()[1:]] == ["*", "*"], csv
        for trf in (await get("/results.trf"), (out / "results.trf").read_text()):
            players = [line for line in trf.splitlines() if line.startswith("001")]
            # the round's pairing, no result (a blank after the colour), no points
            assert len(players) == 4, trf
            assert all(line.rstrip().endswith((" w", " b")) and line[80:84] == " 0.0" for line in players), trf
        for i in (1, 2):
            game = json.loads(await get(f"/live/round-{round_number}/game-{i}.json"))
            assert game["moves"] == [] and game["result"] is None, game
        index = json.loads(await get(f"/live/round-{round_number}/index.json"))
        assert [p["result"] for p in index["pairings"]] == ["*", "*"]
    hub.storage.save_state()
    assert [row.split(",")[-3] for row in
            (out / f"round-{round_number}-results.csv").read_text().splitlines()[1:]] == ["*", "*"]
