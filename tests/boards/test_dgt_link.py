"""The DGT link watched as a board behaves (touchmove.sim.harness: the emulator and translator on a simulated
clock): a link lost with the port kept open, the board switched off meanwhile or not, is noticed, the board set
up again and its move memory read, so the moves made meanwhile come back; the silence watch runs on the board's
time."""

from __future__ import annotations

import random

import chess
import pytest

from tests.boards.test_boards_through_engine import engine_events, published
from tests.host.games import require_games
from touchmove.boards import dgt
from touchmove.boards.base import SILENT_MS
from touchmove.sim import harness
from touchmove.sim.dgt import Drop
from touchmove.sim.pieces import piece_timeline


def long_game() -> tuple[chess.Board, list[chess.Move]]:
    _name, start, moves = next(g for g in require_games() if len(g[2]) >= 60 and g[1].fen() == chess.STARTING_FEN)
    return start, moves[:60]


@pytest.mark.parametrize(("length", "power"), [(3000, True), (3000, False), (20000, False), (20000, True)])
def test_a_link_lost_mid_game_gives_back_every_move_the_board_logged(length: int, power: bool) -> None:
    """The cable out behind the adapter (the port stays open) for 3 s or 20 s mid-game, the board switched off
    and back on meanwhile or not: the drop is noticed, the board set up again (update mode: a board back from
    a power cut is idle) and its memory read: the game comes back whole."""
    start, moves = long_game()
    events = piece_timeline(start, moves, random.Random(4))
    at = max(e.t for e in events) // 3
    run = harness.run("dgt", start, events, seed=4, drops=(Drop(at, length, power),))
    tr = run.translator
    assert isinstance(tr, dgt.DgtTranslator)
    assert tr.links_lost == 1 and tr.recovered > 0
    got = published(engine_events(start, run.records, dgt.MIN_SETTLE_MS))
    assert got == [m.uci() for m in moves]


def test_a_board_switched_off_and_on_is_never_left_idle() -> None:
    """Switched off for a second with the link kept (no reply lost but the check's): it comes back idle; it is
    set up again and plays on."""
    start, moves = long_game()
    events = piece_timeline(start, moves, random.Random(6))
    at = max(e.t for e in events) // 2
    run = harness.run("dgt", start, events, seed=6, drops=(Drop(at, 1000, True),))
    got = published(engine_events(start, run.records, dgt.MIN_SETTLE_MS))
    assert got == [m.uci() for m in moves]


def test_the_silence_watch_runs_on_the_boards_time() -> None:
    """At rate 5 (board ms = host ms x 5) a board that says nothing is reported after 6 s of board time."""
    tr = dgt.DgtTranslator("sim", rate=5)
    tr.start(0)
    tr.feed(dgt.message(dgt.MSG_SERIALNR, b"12345"), 10)
    lines, _ = tr.tick(SILENT_MS - 100)
    assert not [line for line in lines if line.get("alert") == "board_silent"]
    lines, _ = tr.tick(SILENT_MS + 20)
    assert [line["detail"]["silent_ms"] for line in lines if line.get("alert") == "board_silent"] == [SILENT_MS + 10]
