"""A line piece slid to its victim, the victim taken off first, on a DGT board (its scan of 200-250 ms): the queen
is sensed on the first square it crosses for a whole scan and then nowhere until it lands, two scans later. The
victim's square emptied ahead of it on its line is no touch of the other side that makes the move as the board
first showed it: the move waits ``SLIDE_ON_HOLD_MS`` after the victim went, and the capture is made with no
alert. A piece really released short of the victim is that move, made when the hold ends (docs/engine.md)."""

from __future__ import annotations

import chess

from tests.boards.test_fast_replies import codes, lift, moves_of, place, play
from touchmove.rules.pending import SLIDE_ON_HOLD_MS, victim_ahead

#: After 13...dxc3 (shared game 122 of the boards bench): White's queen on d1, Black's on d7, d2-d6 empty.
BEFORE_QXD7 = chess.Board("3rkbnr/p2q1ppp/1pn5/4p1N1/2b1P3/1Np3P1/PP3PBP/R1BQR1K1 w k - 0 14")

#: Qxd7+ as the bench's DGT board reported it: the queen lifted, sensed on d2, the victim on d7 reported taken
#: off (it went first, the scan reads d7 before d2), then the queen leaving d2 and landing on d7 one report later.
QXD7_SLID = [lift(72016, "d1"), place(72233, "d2", "Q"), lift(72293, "d7"), lift(72771, "d2"),
             place(72771, "d7", "Q")]
RXD7 = [lift(74249, "d7"), lift(75100, "d8"), place(75100, "d7", "r")]


def test_a_queen_slid_to_its_victim_taken_off_first_is_the_capture_with_no_alert() -> None:
    events = play(QXD7_SLID + RXD7, BEFORE_QXD7)
    assert moves_of(events) == ["Qxd7+", "Rxd7"]
    assert codes(events) == []  # before: Qd2 made, then amended with moved_after_release
    assert "move_amended" not in [e.type for e in events]


def test_a_queen_released_short_of_the_piece_lifted_ahead_is_that_move() -> None:
    """Qd2 released, Black's queen lifted from d7 (a touch) and moved to e7: Qd2 once the hold has passed."""
    recs = [lift(72016, "d1"), place(72233, "d2", "Q"), lift(72293, "d7"), place(74000, "e7", "q")]
    events = play(recs, BEFORE_QXD7)
    assert moves_of(events) == ["Qd2", "Qe7"]
    made = [e for e in events if e.type == "move"]
    assert made[0].t == 72233  # type: ignore[attr-defined]  # the time the board showed it


def test_the_victim_ahead_is_the_first_piece_beyond_the_landing_on_the_line_come_along() -> None:
    board = BEFORE_QXD7
    d7 = chess.D7
    lifted = {chess.D1: 72016, d7: 72293}
    without_d7 = board.occupied & ~chess.BB_SQUARES[chess.D1] & ~chess.BB_SQUARES[d7] | chess.BB_D2
    assert victim_ahead(board, chess.Move.from_uci("d1d2"), lifted, without_d7) == 72293
    # the victim still standing, or never lifted this ply: none
    assert victim_ahead(board, chess.Move.from_uci("d1d2"), lifted, without_d7 | chess.BB_SQUARES[d7]) is None
    assert victim_ahead(board, chess.Move.from_uci("d1d2"), {chess.D1: 72016}, without_d7) is None
    # a knight or a king goes on no line; a queen's step sideways (Qe2) has no d7 ahead of it
    assert victim_ahead(board, chess.Move.from_uci("g1h1"), lifted, without_d7) is None
    assert victim_ahead(board, chess.Move.from_uci("d1e2"), lifted, without_d7) is None
    assert SLIDE_ON_HOLD_MS >= 500  # two DGT scans and a report
