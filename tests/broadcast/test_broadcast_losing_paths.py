"""Three paths that lost results, each end to end through a real Mosquitto with boards driven as bridges publish.

- a delayed broadcast whose last burst (the mating move and its ``game_end``) fell due while the writer slept;
- a finished game, then the board served by a bridge started afresh (new journal: ``seq`` and ``game`` from 1);
- a resignation declared through the bridge, then the pieces put back (the engine's ``game_resumed`` and a move).

Each path is played twice: with simulated bridges (:func:`served`), and through ``touchmove run`` with a stand-in
board on a pseudo-terminal (the :func:`hall` fixture).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiomqtt
import chess
import pytest

from tests.broadcast.broadcast_helpers import Hall, read_games, tournament_data
from tests.broadcast.test_broadcast_mqtt import ucis, wait_for
from tests.e2e.helpers import (
    OPERA,
    game_moves,
    simple_timeline,
)
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import Tournament, parse_tournament
from touchmove.sim.broadcast_boards import SimBridge
from touchmove.sim.local_broker import LocalBroker

SCHOLAR = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]
RESIGNED = ["c2c4", "e7e5", "b1c3", "g8f6"]


@contextlib.asynccontextmanager
async def served(t: Tournament, broker: LocalBroker) -> AsyncIterator[tuple[Broadcaster, aiomqtt.Client]]:
    """The broadcaster serving ``t`` and an MQTT client for simulated bridges, both on ``broker``."""
    async with BroadcastService(t, port=0) as svc, aiomqtt.Client("127.0.0.1", broker.port) as client:
        yield svc.hub, client


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[Hall]:
    running = Hall(tmp_path)
    try:
        yield running
    finally:
        running.close()


def test_delayed_round_end_is_written_when_due(broker: LocalBroker, tmp_path: Path) -> None:
    """With a delay, the mate and its result (a burst: move, clock, state, game_end) reach ``round-N.pgn``
    once the delay has passed, though nothing else happens on any board afterwards."""
    asyncio.run(_delayed_end(broker, tmp_path))


async def _delayed_end(broker: LocalBroker, tmp_path: Path) -> None:
    data = tournament_data(2, port=broker.port, out=tmp_path)
    data["broadcast"]["delay_minutes"] = 0.02  # 1.2 s
    pushed: list[str] = []
    async with served(parse_tournament(data), broker) as (hub, client):
        hub.outputs.on_pgn(pushed.append)  # what the lichess push is handed
        board = SimBridge(client).board("b01")
        await board.start()
        for uci in SCHOLAR:
            await board.move(uci, remaining_ms=170_000)
        await board.end("1-0", "checkmate", "5.1.1")
        await wait_for(lambda: hub.storage.by_number[1].game.results.board == "1-0", what="the mate, live")
        path = hub.outputs.pgn_path

        def mate_written() -> bool:
            games = read_games(path.read_text()) if path.exists() else []
            return bool(games) and games[0].headers["Result"] == "1-0" and ucis(games[0]) == SCHOLAR

        await wait_for(mate_written, 1.2 + 3.0, "the mate in round-3.pgn after the delay")
        assert '[Result "1-0"]' in pushed[-1]


def test_a_bridge_started_afresh_never_touches_a_finished_game(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_fresh_bridge(broker, tmp_path))


async def _fresh_bridge(broker: LocalBroker, tmp_path: Path) -> None:
    t = parse_tournament(tournament_data(1, port=broker.port, out=tmp_path))
    async with served(t, broker) as (hub, client):
        old = SimBridge(client).board("b01")
        await old.start()
        for uci in SCHOLAR:
            await old.move(uci)
        await old.end("1-0", "checkmate", "5.1.1")
        await wait_for(lambda: hub.storage.by_number[1].game.results.board == "1-0", what="the mate")
        # the board moves to another hall PC: a bridge with a fresh journal (new session, seq and game from 1)
        fresh = SimBridge(client).board("b01")
        await fresh.start()
        await fresh.move("d2d4")
        await fresh.move("d7d5")
        games = hub.storage.by_number[1].games
        await wait_for(lambda: games.held is not None and games.held.ply == 2, what="the new game, held")
        await wait_for(lambda: hub.outputs.written_version == hub.storage.version, what="the write")
        written = read_games(hub.outputs.pgn_path.read_text())
        assert written[0].headers["Result"] == "1-0" and ucis(written[0]) == SCHOLAR
        assert [m.uci for m in games.held.moves] == ["d2d4", "d7d5"]
        # the arbiter allows it as a further game: both are in the round, the mate untouched
        hub.actions.permit_game(1, "next")
        both = read_games(hub.outputs.round_pgn())
        assert [ucis(g) for g in both] == [SCHOLAR, ["d2d4", "d7d5"]]
        assert [g.headers["Result"] for g in both] == ["1-0", "*"]
        await old.bridge.clear_retained()


def test_a_declared_resignation_survives_the_board_reset(broker: LocalBroker, tmp_path: Path) -> None:
    asyncio.run(_declared(broker, tmp_path))


async def _declared(broker: LocalBroker, tmp_path: Path) -> None:
    t = parse_tournament(tournament_data(1, port=broker.port, out=tmp_path))
    async with served(t, broker) as (hub, client):
        board = SimBridge(client).board("b01")
        await board.start()
        for uci in RESIGNED:
            await board.move(uci)
        # a ``result`` record through the bridge: the engine's game_end "by" the arbiter
        board.result = "0-1"
        await board.event({"type": "game_end", "game": 1, "result": "0-1", "reason": "resignation",
                           "article": "5.1.2", "by": "arbiter"})
        await wait_for(lambda: hub.storage.by_number[1].game.results.effective() == "0-1", what="the resignation")
        # the pieces are put back: a legal-looking move, so the engine withdraws the end and plays it
        board.result = "*"
        await board.event({"type": "game_resumed", "game": 1, "ply": 5})
        await board.move("g1f3")
        await wait_for(lambda: any(a.code == "play_after_result" for a in hub.storage.alerts),
                       what="the attention alert")
        game = hub.storage.by_number[1].game
        assert game.results.effective() == "0-1"
        assert [m.uci for m in game.moves] == RESIGNED  # no bogus ply
        await wait_for(lambda: hub.outputs.written_version == hub.storage.version, what="the write")
        written = read_games(hub.outputs.pgn_path.read_text())
        assert written[0].headers["Result"] == "0-1" and ucis(written[0]) == RESIGNED
        alert = next(a for a in hub.storage.alerts if a.code == "play_after_result")
        assert alert.board == 1 and alert.detail["result"] == "0-1"
        # the arbiter clears it (play really went on): the moves the bridge shows are taken
        hub.actions.record_result(1, "*")
        await board.move("b8c6")
        await wait_for(lambda: game.ply == 6, what="play going on after the arbiter cleared the result")
        assert game.results.effective() == "*"
        await board.bridge.clear_retained()


def test_a_declared_resignation_through_the_real_bridge_survives_the_pieces_put_back(hall: Hall) -> None:
    """The same through ``touchmove run``: 4 plies on a stand-in board, a ``result`` command (0-1, resignation)
    on the bridge's ``set`` topic, then White's knight put back c3 -> b1 (a legal move to the engine, which
    withdraws the declared end and plays it) and the rest of the pieces put back. The round PGN keeps 0-1 and
    the 4 plies; the arbiter gets the alert; plies played 4, journaled more, published more, exported 4."""
    asyncio.run(_real_bridge_resignation(hall))


async def _real_bridge_resignation(hall: Hall) -> None:
    recs = simple_timeline([chess.Move.from_uci(u) for u in RESIGNED], think=400, hand=120)
    t = recs[-1]["t"] + 16_000  # time for the arbiter's result to reach the bridge (at speed 4: 4 s)
    for kind, sq in (("lift", "c3"), ("place", "b1")):  # White's knight back home: a legal Nb1 to the engine
        recs.append({"t": t, "type": kind, "sq": sq})
        t += 150
    t += 3000
    for kind, sq in (("lift", "f6"), ("place", "g8"), ("lift", "e5"), ("place", "e7"), ("lift", "c4"),
                     ("place", "c2")):
        recs.append({"t": t, "type": kind, "sq": sq})
        t += 300
    board = hall.plug(recs)
    hall.start_bridge("j")
    published: list[dict[str, object]] = []
    async with BroadcastService(hall.tournament(1), port=0, svg_workers=0) as svc, \
            aiomqtt.Client("127.0.0.1", hall.port) as client:
        hub = svc.hub
        await client.subscribe("touchmove/boards/fake1/events", qos=1)

        async def collect() -> None:
            async for message in client.messages:
                published.append(json.loads(bytes(message.payload)))

        collector = asyncio.create_task(collect())
        await wait_for(lambda: hub.ingest.bridges.get("touchmove") == "online", 20, "the bridge online")
        board.start()
        game = lambda: hub.storage.by_number[1].game  # noqa: E731
        await wait_for(lambda: game().ply == 4, 30, "the 4 plies")
        await client.publish("touchmove/boards/fake1/set", json.dumps(
            {"command": "result", "result": "0-1", "reason": "resignation"}).encode(), qos=1)
        await wait_for(lambda: game().results.effective() == "0-1", 5, "the declared resignation")
        await wait_for(lambda: any(e.get("type") == "game_resumed" for e in published), 30,
                       "the engine's game_resumed (the knight put back)")
        await wait_for(lambda: any(a.code == "play_after_result" for a in hub.storage.alerts), 5, "the alert")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # the rest of the pieces put back
            await asyncio.sleep(0.1)
        await wait_for(lambda: hub.outputs.written_version == hub.storage.version, 5, "the write")
        collector.cancel()
        await asyncio.gather(collector, return_exceptions=True)
        written = read_games(hub.outputs.pgn_path.read_text())
    moves_published = [e for e in published if e.get("type") == "move"]
    assert len(moves_published) > 4  # the engine published the knight going back as a move
    assert written[0].headers["Result"] == "0-1" and ucis(written[0]) == RESIGNED  # exported: 4 plies
    assert game().results.source() == "arbiter" and game().ply == 4


def test_a_board_moved_to_another_bridge_with_a_fresh_journal(hall: Hall) -> None:
    """Through ``touchmove run``: Scholar's mate on a stand-in board under bridge A; bridge A stops and bridge B
    (a fresh journal: seq and game numbers from 1) serves the board, which is cleared and set up again and
    two plies played. The round PGN keeps the mate; the new game is held."""
    asyncio.run(_real_fresh_bridge(hall))


async def _real_fresh_bridge(hall: Hall) -> None:
    from tests.broadcast.test_broadcast_e2e_bridge import START_OCC, _occupancy

    recs = simple_timeline([chess.Move.from_uci(u) for u in SCHOLAR], think=400, hand=120)
    t = recs[-1]["t"] + 40_000  # the board is carried to the other hall PC (at speed 4: 10 s)
    occ = _occupancy(recs)
    for sq in chess.SquareSet(occ):
        recs.append({"t": t, "type": "lift", "sq": chess.square_name(sq)})
        t += 120
    t += 1500
    for sq in chess.SquareSet(START_OCC):
        recs.append({"t": t, "type": "place", "sq": chess.square_name(sq)})
        t += 120
    recs += simple_timeline([chess.Move.from_uci("d2d4"), chess.Move.from_uci("d7d5")], t0=t + 1500, think=400,
                            hand=120)
    board = hall.plug(recs)
    async with BroadcastService(hall.tournament(1), port=0, svg_workers=0) as svc:
        hub = svc.hub
        first = hall.start_bridge("a")
        await wait_for(lambda: hub.ingest.bridges.get("touchmove") == "online", 20, "bridge A online")
        board.start()
        await wait_for(lambda: hub.storage.by_number[1].game.results.board == "1-0", 40, "the mate under bridge A")
        first.terminate()
        first.wait(10)
        hall.start_bridge("b")
        games = hub.storage.by_number[1].games
        await wait_for(lambda: games.held is not None and games.held.ply == 2, 60,
                       "the new game under bridge B, held")
        await wait_for(lambda: hub.outputs.written_version == hub.storage.version, 5, "the write")
        written = read_games(hub.outputs.pgn_path.read_text())
    assert len(written) == 1 and written[0].headers["Result"] == "1-0" and ucis(written[0]) == SCHOLAR
    assert games.held is not None and [m.uci for m in games.held.moves] == ["d2d4", "d7d5"]
    assert games.held.number == 1  # bridge B numbers its games from 1 again


def test_the_delayed_end_through_the_real_bridge(hall: Hall) -> None:
    """The Opera Game through ``touchmove run`` with a delay of 1.2 s: the mate and 1-0 reach ``round-3.pgn``
    (and the push's listener) once due, though nothing happens afterwards. (The real bridge sends the mating
    move and its ``game_end`` within a millisecond, so the old writer usually caught both by luck: the
    simulated-bridge test above is the one that failed before the fix; this one keeps the whole path.)"""
    asyncio.run(_real_delayed(hall))


async def _real_delayed(hall: Hall) -> None:
    moves = game_moves(OPERA)
    board = hall.plug(simple_timeline(moves, think=300, hand=100))
    hall.start_bridge("j")
    pushed: list[str] = []
    async with BroadcastService(hall.tournament(2, delay_minutes=0.02), port=0, svg_workers=0) as svc:
        hub = svc.hub
        hub.outputs.on_pgn(pushed.append)
        await wait_for(lambda: hub.ingest.bridges.get("touchmove") == "online", 20, "the bridge online")
        board.start()
        await wait_for(lambda: hub.storage.by_number[1].game.results.board == "1-0", 60, "the mate, live")
        path = hub.outputs.pgn_path

        def mate_written() -> bool:
            games = read_games(path.read_text())
            return games[0].headers["Result"] == "1-0" and len(ucis(games[0])) == len(moves)

        await wait_for(mate_written, 1.2 + 3.0, "the mate in round-3.pgn once due")
        assert '[Result "1-0"]' in pushed[-1]
