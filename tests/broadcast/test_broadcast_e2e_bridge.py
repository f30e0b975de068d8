"""End to end with the real bridge: stand-in board -> pty -> ``touchmove run`` -> Mosquitto -> broadcaster.

The Opera Game (Morphy, 1858) is played on a CPython stand-in board; the round PGN the broadcaster writes and
serves must hold it move for move, with the board's own result (the mate).
"""

from __future__ import annotations

import asyncio
import io
import sys
import time
from pathlib import Path

import aiohttp
import chess.pgn

from tests.broadcast.broadcast_helpers import tournament_data
from tests.e2e.helpers import (
    OPERA,
    REPO,
    Broker,
    game_moves,
    simple_timeline,
    start_daemon,
    write_config,
    write_timeline,
)
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.ptyboard import PtyBoard

FAKE = REPO / "tests" / "e2e" / "fake_board.py"


def test_opera_game_from_the_bridge_to_the_round_pgn(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.start()
    try:
        asyncio.run(_opera(tmp_path, broker))
    finally:
        broker.stop()


async def _opera(tmp_path: Path, broker: Broker) -> None:
    moves = game_moves(OPERA)
    timeline = write_timeline(tmp_path / "t.jsonl", simple_timeline(moves, think=300, hand=100))
    data = tournament_data(2, port=broker.port, out=tmp_path / "out")
    data["rounds"][0]["boards"][0]["board_id"] = "fake1"
    t = parse_tournament(data)
    board = PtyBoard([sys.executable, str(FAKE), str(timeline), "fake1", "--speed", "4"],
                     str(tmp_path / "board1"))
    board.plug()
    cfg = write_config(tmp_path / "c.toml", broker_port=broker.port, ports=[str(tmp_path / "board*")],
                       journal=tmp_path / "j.sqlite3", settle_ms=150)
    daemon = start_daemon(cfg, tmp_path / "daemon.log")
    try:
        async with BroadcastService(t, port=0, svg_workers=0) as svc:
            deadline = time.monotonic() + 20
            while svc.hub.bridges.get("touchmove") != "online":
                assert time.monotonic() < deadline, "the bridge did not come online"
                await asyncio.sleep(0.05)
            board.start()
            deadline = time.monotonic() + 60
            while svc.hub.by_number[1].game.results.board != "1-0":
                assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
                await asyncio.sleep(0.1)
            while svc.hub.written_version != svc.hub.version:
                await asyncio.sleep(0.05)
            async with aiohttp.ClientSession() as http, http.get(svc.pgn_url) as resp:
                served = await resp.text()
    finally:
        daemon.terminate()
        daemon.wait(10)
        board.stop()
    assert served == svc.hub.pgn_path.read_text()
    game = chess.pgn.read_game(io.StringIO(served))
    assert game is not None and not game.errors
    assert list(game.mainline_moves()) == moves
    assert game.headers["Result"] == "1-0" and game.headers["Round"] == "3.1"
    assert game.headers["White"] == "White, Player 1"
