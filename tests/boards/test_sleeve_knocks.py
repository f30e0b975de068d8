"""A sleeve knocking a piece as the hand that made a move leaves (docs/hands.md): the piece next to the landing
square is lifted within a board report of that move, falls off the board or onto an empty neighbouring square,
and is put back a moment later. Neither is the next mover's touch (4.3 binds deliberate touches), and a piece
fallen where it could move is not his move: such an answer waits ``KNOCK_HOLD_MS`` before it is made, and one
left standing then is made with the time it showed (docs/engine.md)."""

from __future__ import annotations

import chess

from tests.boards.test_fast_replies import codes, lift, moves_of, place
from tests.boards.test_fast_replies import play as play_from
from touchmove.records import Record
from touchmove.rules import Event
from touchmove.rules.pending import KNOCK_HOLD_MS, knock_lift, knocked_answer

SETTLE_MS = 200     # the bridge's for a Chessnut board (a status every 100 ms)


def play(recs: list[Record]) -> list[Event]:
    """Feed the starting position (its pieces named) and ``recs`` with a Chessnut's settle time; the events."""
    return play_from(recs, settle_ms=SETTLE_MS)


#: 1.e4 d5: Black's pawn lands on d5, next to White's pawn on e4.
E4_D5 = [lift(1000, "e2"), place(1100, "e4", "P"), lift(3000, "d7"), place(3100, "d5", "p")]


def test_a_knocked_piece_fallen_where_it_could_move_and_put_back_is_no_move() -> None:
    """Black's sleeve knocks the e4 pawn onto e5 (one status after d5 landed) and puts it back 0.9 s later; White
    then plays Nf3. Before: e5 was made, taken back, and Nf3 raised touch_move (4.3.1, e4 touched)."""
    events = play([*E4_D5, lift(3200, "e4"), place(3200, "e5", "P"), lift(4100, "e5"), place(4200, "e4", "P"),
                   lift(6000, "g1"), place(6100, "f3", "N")])
    assert moves_of(events) == ["e4", "d5", "Nf3"]
    assert not [e for e in events if e.type in ("takeback", "move_amended")]
    assert codes(events) == []
    knocked = [e for e in events if e.type == "touch" and e.sq == "e4" and e.t > 3100]  # type: ignore[attr-defined]
    assert [e.binds for e in knocked] == [False]  # type: ignore[attr-defined]


def test_a_piece_knocked_off_the_board_and_put_back_binds_nobody() -> None:
    """The e4 pawn knocked off the board as d5 landed and put back 0.8 s later: Nf3 raises no touch_move."""
    events = play([*E4_D5, lift(3200, "e4"), place(4000, "e4", "P"), lift(6000, "g1"), place(6100, "f3", "N")])
    assert moves_of(events) == ["e4", "d5", "Nf3"]
    assert codes(events) == []


def test_a_quick_answer_a_knocked_piece_could_show_is_made_with_the_time_it_showed() -> None:
    """White answers d5 at once with e5 (one status later) and leaves it: made after the hold, at 3200."""
    events = play([*E4_D5, lift(3200, "e4"), place(3200, "e5", "P"), lift(9000, "c7"), place(9100, "c5", "p")])
    assert moves_of(events) == ["e4", "d5", "e5", "c5"]
    assert [e.t for e in events if e.type == "move"] == [1100, 3100, 3200, 9100]  # type: ignore[attr-defined]
    assert codes(events) == []


def test_a_quick_answer_answered_within_the_hold_is_made_before_its_answer() -> None:
    """e5 at once, then ...c5 0.5 s later (within the hold): both made, in turn."""
    events = play([*E4_D5, lift(3200, "e4"), place(3200, "e5", "P"), lift(3700, "c7"), place(3800, "c5", "p")])
    assert moves_of(events) == ["e4", "d5", "e5", "c5"]
    assert codes(events) == []


def test_a_lift_is_a_knock_next_to_the_landing_square_and_within_the_window_only() -> None:
    board = chess.Board()
    for san in ("e4", "d5"):
        board.push_san(san)
    last = board.peek()
    assert knock_lift(board, last, 3100, chess.E4, 3200)
    assert not knock_lift(board, last, 3100, chess.E4, 3700)   # a touch half a second later: the mover's
    assert not knock_lift(board, last, 3100, chess.G1, 3200)   # not next to d5
    assert not knock_lift(board, None, None, chess.E4, 3200)


def test_an_answer_is_held_as_a_knock_when_a_step_onto_an_empty_square_only() -> None:
    board = chess.Board()
    for san in ("e4", "d5"):
        board.push_san(san)
    last = board.peek()
    assert knocked_answer(board, last, 3100, chess.Move.from_uci("e4e5"), 3200)
    assert not knocked_answer(board, last, 3100, chess.Move.from_uci("e4d5"), 3200)   # a capture: no fall
    assert not knocked_answer(board, last, 3100, chess.Move.from_uci("e4e5"), None)
    assert KNOCK_HOLD_MS > 1400   # a knocked piece is put back up to 1.4 s after it fell, then reported


#: 1.e4 e5, then White's knight from b1, landing on c3 next to the b2 pawn.
E4_E5 = [lift(1000, "e2"), place(1100, "e4", "P"), lift(2000, "e7"), place(2100, "e5", "p")]


def test_a_piece_the_sleeve_knocks_as_the_hand_comes_in_binds_nobody() -> None:
    """Nc3 with the sleeve knocking the b2 pawn off as the knight comes in, put back 0.7 s later; a DGT scan in
    field order reports b2's lift before b1's, 220 ms before c3 fills: no touch_move (DGT game 70: 4.3.1 "move
    b2" before, the pawn taken for the first piece touched)."""
    events = play([*E4_E5, lift(3000, "b2"), lift(3030, "b1"), place(3220, "c3", "N"), place(3900, "b2", "P")])
    assert moves_of(events) == ["e4", "e5", "Nc3"]
    assert codes(events) == []


def test_a_piece_touched_before_the_move_still_binds() -> None:
    """The b2 pawn lifted and put back 0.8 s before the knight lands on c3: touched, it must move (4.3.1)."""
    events = play([*E4_E5, lift(2400, "b2"), place(2600, "b2", "P"), lift(3000, "b1"), place(3200, "c3", "N")])
    assert moves_of(events) == ["e4", "e5", "Nc3"]
    assert codes(events) == ["touch_move"]
