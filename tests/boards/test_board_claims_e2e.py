"""A result read from the pieces is a claim (issue 35), end to end: each vendor board's emulator on a pty, the
real bridge (``touchmove run``), a private Mosquitto and the broadcaster. One scan that misreads the d5 knight
as a black king beside the white king on e4 ("kings in the centre", 1-0) is no result, no touch and no move: the
game comes back whole, 24 plies and ``*``."""

from __future__ import annotations

import asyncio
import io
import random
import time
from pathlib import Path

import chess
import chess.pgn
import pytest

from tests.boards.rig import BoardRig
from tests.broadcast.broadcast_helpers import tournament_data
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import parse_tournament
from touchmove.sim.pieces import Change, Event, piece_timeline

#: 1.e4 d5 2.exd5 Nf6 3.Ke2 Nxd5 4.Kf3 Nc6 5.Ke4, the misreading, and on to 24 plies.
OPENING = "1. e4 d5 2. exd5 Nf6 3. Ke2 Nxd5 4. Kf3 Nc6 5. Ke4"
REST = "Nf6+ 6. Kf3 e5 7. d3 Bc5 8. Be3 Bxe3 9. fxe3 O-O 10. Nc3 Re8 11. Nge2 Be6 12. Kg3 Qd6+"
#: How long the misreading lasts (ms): one DGT scan, as reported.
GLITCH_MS = 250


def glitch_game() -> tuple[list[chess.Move], list[Event]]:
    """Return the 24 plies and their piece timeline, with the d5 knight read as a black king for one scan after
    5.Ke4."""
    game = chess.pgn.read_game(io.StringIO(f"{OPENING} {REST} *"))
    assert game is not None and not game.errors
    moves = list(game.mainline_moves())
    assert len(moves) == 24
    board = chess.Board()
    events = piece_timeline(board, moves[:9], random.Random(35))
    for m in moves[:9]:
        board.push(m)
    assert board.piece_at(chess.D5) == chess.Piece(chess.KNIGHT, chess.BLACK)
    assert board.king(chess.WHITE) == chess.E4
    t = max(e.t for e in events) + 1500
    events += [Change(t, chess.D5, "k"), Change(t + GLITCH_MS, chess.D5, "n")]
    events += piece_timeline(board, moves[9:], random.Random(36), t=t + 2500)
    return moves, sorted(events, key=lambda e: e.t)


@pytest.mark.parametrize("protocol", ["dgt", "chesslink", "chessnut"])
def test_one_misread_scan_ends_no_game(tmp_path: Path, protocol: str) -> None:
    moves, events = glitch_game()
    want = [m.uci() for m in moves]
    # real time (rate 1), not 4: these boards report no times, so the bridge stamps their changes with its own
    # time times the rate; a bridge not run for 60 ms was 240 ms of board time at rate 4, more than the
    # Chessnut's 200 ms settle (a run with a core kept busy read 11. Nge2 Be6 12. Kg3 as Kg3 ... Ne2 with
    # changes_lost), and an emulator not run for 300 ms was 1.5 s at rate 5 (test_e2e_boards.py). A real board
    # runs at rate 1.
    with BoardRig(tmp_path, protocol, moves, speed=1, events=events, start_board=False) as rig:
        served = asyncio.run(_broadcast(tmp_path, rig, want))
        counts = rig.counts()
    events_seen = rig.events()
    assert [e for e in events_seen if e.get("type") in ("game_end", "game_resumed")] == []
    assert not {"touch_move", "touch_out_of_turn"} & set(rig.alerts()), rig.alerts()
    assert counts == {"published": 24, "journaled": 24, "exported": 24}
    game = chess.pgn.read_game(io.StringIO(served))
    assert game is not None and [m.uci() for m in game.mainline_moves()] == want
    assert game.headers["Result"] == "*"


async def _broadcast(tmp_path: Path, rig: BoardRig, want: list[str]) -> str:
    """Start the rig's board once a broadcaster follows it; wait until the whole game is on MQTT and in the round
    PGN; return the round PGN."""
    assert rig.sub is not None
    data = tournament_data(1, port=rig.broker.port, out=tmp_path / "out")
    data["rounds"][0]["boards"][0]["board_id"] = rig.board_id
    async with BroadcastService(parse_tournament(data), port=0, svg_workers=0) as svc:
        hub = svc.hub
        deadline = time.monotonic() + 20
        while hub.ingest.bridges.get("touchmove") != "online":
            assert time.monotonic() < deadline, "the bridge did not come online"
            await asyncio.sleep(0.05)
        rig.board.start()
        deadline = time.monotonic() + 180
        while rig.moves() != want:
            assert time.monotonic() < deadline, f"got {rig.moves()}\nalerts {rig.alerts()}\n{rig.log()[-3000:]}"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.5)     # a claim would come RESULT_STEADY_MS after the misreading: none comes
        deadline = time.monotonic() + 10
        while hub.storage.by_number[1].game.ply != len(want):
            assert time.monotonic() < deadline, f"the broadcaster kept {hub.storage.by_number[1].game.ply} plies " \
                                                f"({hub.storage.by_number[1].game.results})"
            await asyncio.sleep(0.2)
        while hub.outputs.written_version != hub.storage.version:
            await asyncio.sleep(0.05)
        assert hub.storage.by_number[1].game.results.effective() == "*"
        assert not hub.storage.by_number[1].game.frozen_by_declaration
        return hub.outputs.pgn_path.read_text()
