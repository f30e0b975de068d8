"""The DGT link watched as a board behaves (touchmove.sim.harness: the emulator and translator on a simulated
clock): a link lost with the port kept open, the board switched off meanwhile or not, is noticed, the board set
up again and its move memory read, so the moves made meanwhile come back; the silence watch runs on the board's
time."""

from __future__ import annotations

import random
from collections.abc import Callable

import chess
import pytest

from tests.boards.test_boards_through_engine import engine_events, published
from tests.host.games import require_games
from touchmove.boards import dgt
from touchmove.boards.base import SILENT_HOST_MIN_MS, SILENT_MS
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
    """At rate 3 (board ms = host ms x 3) a board that says nothing is reported after 6 s of board time."""
    tr = dgt.DgtTranslator("sim", rate=3)
    tr.start(0)
    tr.feed(dgt.message(dgt.MSG_SERIALNR, b"12345"), 10)
    lines, _ = tr.tick(SILENT_MS - 100)
    assert not [line for line in lines if line.get("alert") == "board_silent"]
    lines, _ = tr.tick(SILENT_MS + 20)
    assert [line["detail"]["silent_ms"] for line in lines if line.get("alert") == "board_silent"] == [SILENT_MS + 10]


def test_a_fast_simulation_is_not_judged_silent_by_a_busy_host() -> None:
    """At rate 8 six seconds of board time are 0.75 s of the host's: a loaded machine that runs the bridge's timer
    (or the simulated board) that late is not a board gone silent. The watch waits at least SILENT_HOST_MIN_MS of
    host time (a fresh-clone CI run on a loaded machine: a false ``board_silent`` in a game at rate 8)."""
    rate = 8
    tr = dgt.DgtTranslator("sim", rate=rate)
    tr.start(0)
    tr.feed(dgt.message(dgt.MSG_SERIALNR, b"12345"), 10)
    lines, _ = tr.tick(10 + SILENT_MS + 800)      # 0.85 s of the host's time
    assert not [line for line in lines if line.get("alert") == "board_silent"]
    lines, _ = tr.tick(10 + SILENT_HOST_MIN_MS * rate)
    assert [line["detail"]["silent_ms"] for line in lines if line.get("alert") == "board_silent"] == [
        SILENT_HOST_MIN_MS * rate]


#: A board dump's header as the DGT board sends it (its size, 67, in two 7-bit bytes).
DUMP_HEADER = dgt.header(dgt.MSG_BOARD_DUMP, 67)


def misreading_dumps(which: set[int]) -> Callable[[bytes], bytes]:
    """Return a corruption of the board's bytes (harness.run's ``corrupt``) that misreads one empty square as a
    white queen in the board dumps numbered ``which`` (1 = the first dump the board sends)."""
    seen = 0

    def corrupt(data: bytes) -> bytes:
        nonlocal seen
        out = bytearray(data)
        at = out.find(DUMP_HEADER)
        while at >= 0 and at + 67 <= len(out):
            seen += 1
            if seen in which:
                field_no = next(f for f in range(64) if out[at + 3 + f] == 0)
                out[at + 3 + field_no] = dgt.CONTENT_CODES["Q"]
            at = out.find(DUMP_HEADER, at + 67)
        return bytes(out)

    return corrupt


def test_one_misread_board_dump_is_asked_again_and_no_lost_link() -> None:
    """A check's dump misreading one square once (the board's scan for that dump read it wrong) is counted and
    the dump asked for again: the next agrees, the link is not taken for lost (no error line, no relink)."""
    start, moves = long_game()
    events = piece_timeline(start, moves, random.Random(4))
    run = harness.run("dgt", start, events, seed=4, corrupt=misreading_dumps({20}))
    tr = run.translator
    assert isinstance(tr, dgt.DgtTranslator)
    assert [line for line in run.lines if line.get("type") == "error"] == []
    assert (tr.links_lost, tr.bad_dumps) == (0, 1)
    assert published(engine_events(start, run.records, dgt.MIN_SETTLE_MS)) == [m.uci() for m in moves]


def test_dumps_that_differ_twice_in_a_row_are_a_lost_link() -> None:
    """The dump asked for again differs as well: the link was lost (the board set up again, its memory read)."""
    start, moves = long_game()
    events = piece_timeline(start, moves, random.Random(4))
    run = harness.run("dgt", start, events, seed=4, corrupt=misreading_dumps({20, 21}))
    tr = run.translator
    assert isinstance(tr, dgt.DgtTranslator)
    errors = [line["why"] for line in run.lines if line.get("type") == "error"]
    assert len(errors) == 1 and "differs from its updates 2 times" in errors[0], errors
    assert (tr.links_lost, tr.bad_dumps) == (1, 1)
