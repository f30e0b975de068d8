"""End to end with the real bridge: stand-in board -> pty -> ``touchmove run`` -> Mosquitto -> broadcaster.

The Opera Game (Morphy, 1858) is played on a CPython stand-in board; the round PGN the broadcaster writes and
serves must hold it move for move, with the board's own result (the mate).
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import aiohttp
import chess
import chess.pgn

from tests.broadcast.broadcast_helpers import Hall, read_games, until
from tests.e2e.helpers import OPERA, game_moves, simple_timeline
from touchmove.broadcast.service import BroadcastService


def test_opera_game_from_the_bridge_to_the_round_pgn(tmp_path: Path) -> None:
    with Hall(tmp_path) as hall:
        asyncio.run(_opera(hall))


async def _opera(hall: Hall) -> None:
    moves = game_moves(OPERA)
    board = hall.plug(simple_timeline(moves, think=300, hand=100))
    hall.start_bridge("j")
    async with BroadcastService(hall.tournament(2), port=0, svg_workers=0) as svc:
        deadline = time.monotonic() + 20
        while svc.hub.ingest.bridges.get("touchmove") != "online":
            assert time.monotonic() < deadline, "the bridge did not come online"
            await asyncio.sleep(0.05)
        board.start()
        deadline = time.monotonic() + 60
        while svc.hub.storage.by_number[1].game.results.board != "1-0":
            assert time.monotonic() < deadline, hall.log_tail("j")
            await asyncio.sleep(0.1)
        while svc.hub.outputs.written_version != svc.hub.storage.version:
            await asyncio.sleep(0.05)
        async with aiohttp.ClientSession() as http, http.get(svc.pgn_url) as resp:
            served = await resp.text()
    assert served == svc.hub.outputs.pgn_path.read_text()
    game = chess.pgn.read_game(io.StringIO(served))
    assert game is not None and not game.errors
    assert list(game.mainline_moves()) == moves
    assert game.headers["Result"] == "1-0" and game.headers["Round"] == "3.1"
    assert game.headers["White"] == "White, Player 1"


START_OCC = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8


def _occupancy(recs: list[dict], occ: int = START_OCC) -> int:
    for r in recs:
        bit = chess.BB_SQUARES[chess.parse_square(r["sq"])]
        occ = occ | bit if r["type"] == "place" else occ & ~bit
    return occ


def _cleared_and_set_up(occ: int, t: int, hand: int = 120) -> tuple[list[dict], int]:
    """Every piece lifted off the board, then the start position set up (a new game, for the bridge)."""
    recs: list[dict] = []
    for sq in chess.SquareSet(occ):
        recs.append({"t": t, "type": "lift", "sq": chess.square_name(sq)})
        t += hand
    t += 1500
    for sq in chess.SquareSet(START_OCC):
        recs.append({"t": t, "type": "place", "sq": chess.square_name(sq)})
        t += hand
    return recs, t + 1500


def _timeline(ucis: list[str], *, kings: bool = False) -> list[dict]:
    """A game, (the kings put in the centre,) the board cleared and set up again, and two plies of the next."""
    moves = [chess.Move.from_uci(u) for u in ucis]
    recs = simple_timeline(moves, think=400, hand=120)
    t = recs[-1]["t"] + 2500
    if kings:  # white king e1 -> d4, black king e8 -> d5, quickly: a draw (one dark, one light square)
        for kind, sq in (("lift", "e1"), ("place", "d4"), ("lift", "e8"), ("place", "d5")):
            recs.append({"t": t, "type": kind, "sq": sq})
            t += 120
        t += 3000
    cleared, t = _cleared_and_set_up(_occupancy(recs), t)
    recs += cleared
    recs += simple_timeline([chess.Move.from_uci("d2d4"), chess.Move.from_uci("d7d5")], t0=t, think=400, hand=120)
    return recs


SCHOLAR = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]
KINGS_GAME = ["e2e4", "e7e5", "g1f3", "b8c6"]
RESIGNED = ["c2c4", "e7e5", "b1c3", "g8f6"]


def test_results_survive_the_board_set_up_again_and_a_restart(tmp_path: Path) -> None:
    """Three boards through the real bridge: a mate (the board's result), a draw by the kings in the centre,
    a resignation (the arbiter's result); each board cleared and set up again, a new game started. The
    round PGN keeps every result and game, and is byte for byte the same after a broadcaster restart."""
    with Hall(tmp_path) as hall:
        asyncio.run(_set_up_again(hall))


async def _set_up_again(hall: Hall) -> None:
    for ucis, kings in ((SCHOLAR, False), (KINGS_GAME, True), (RESIGNED, False)):
        hall.plug(_timeline(ucis, kings=kings))
    t = hall.tournament(3)
    hall.start_bridge("j")
    log_tail = lambda: hall.log_tail("j")  # noqa: E731
    async with BroadcastService(t, port=0, svg_workers=0) as svc:
        hub = svc.hub
        await until(lambda: hub.ingest.bridges.get("touchmove") == "online", 20, "the bridge online", log_tail)
        for board in hall.boards:
            board.start()
        held = lambda: all(v.games.held is not None and v.games.held.ply == 2  # noqa: E731
                           for v in hub.storage.by_number.values())
        await until(held, 90, "every board's next game, held", log_tail)
        # the resigned game: the arbiter enters its result after the board was set up again
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{svc.url}/api/boards/3/result", json={"result": "0-1"},
                                 headers={"Authorization": "Bearer s3cret"}) as resp:
                assert resp.status == 200
            await until(lambda: hub.outputs.written_version == hub.storage.version, 5, "the PGN written", log_tail)
            async with http.get(svc.pgn_url) as resp:
                before = await resp.text()
    games = read_games(before)
    assert [g.headers["Result"] for g in games] == ["1-0", "1/2-1/2", "0-1"]
    assert [[m.uci() for m in g.mainline_moves()] for g in games] == [SCHOLAR, KINGS_GAME, RESIGNED]
    sources = [v.game.results.source() for v in hub.storage.by_number.values()]
    assert sources == ["board", "kings", "arbiter"]
    # a restart: the bridge still runs (its retained topics now show the new games)
    async with BroadcastService(t, port=0, svg_workers=0) as svc2:
        hub2 = svc2.hub
        await until(lambda: all(v.games.held is not None and v.games.held.ply == 2
                                and not v.games.held.needs_resync for v in hub2.storage.by_number.values()),
                    20, "the held games back from the retained PGNs", log_tail)
        async with aiohttp.ClientSession() as http, http.get(svc2.pgn_url) as resp:
            after = await resp.text()
        assert after == before
        # the arbiter allows the next game on board 1: it becomes round 3.1.2, game 1 stays
        hub2.actions.permit_game(1, "next")
        text = hub2.outputs.round_pgn()
        assert text.startswith(before.split("\n\n[Event")[0]) and '[Round "3.1.2"]' in text
