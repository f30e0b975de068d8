"""The hand model with the pieces it carries (touchmove.sim.pieces): the pieces a board that names them would
report, for the habits that put a piece where the move does not (the DGT harder hands of bench/boards.py)."""

from __future__ import annotations

import random

import chess

from touchmove.sim import hands
from touchmove.sim.pieces import Change, piece_timeline


def test_a_victim_pushed_aside_is_named_as_the_victim_whichever_square_is_sensed_first() -> None:
    """Qd2xc2 with the black rook pushed onto c3 first: the piece sensed on c3 is the rook, also when c3 is
    sensed before c2 empties (before, the queen, the piece lifted last, was named there: a DGT board then
    reported a white queen on c3 and the engine read Qc3). White's king, lifted and put back before the capture
    (j'adoube), is named the king."""
    start = chess.Board("4k3/8/8/8/8/8/2rQ4/4K3 w - - 0 1")
    move = chess.Move.from_uci("d2c2")
    style = hands.Style(push_aside=1.0, jadoube=0.5, promote_record=False, chatter=0.0, bounce=0.0, slide=0.0,
                        overlap=0.0)
    before_its_square_empties = touched = 0
    for seed in range(40):
        habits: list[list[str]] = []
        events = piece_timeline(start, [move], random.Random(seed), style, habits=habits)
        assert "victim pushed aside" in habits[0], habits
        changes = [e for e in events if isinstance(e, Change)]
        assert all(e.piece == "K" for e in changes if e.sq == chess.E1 and e.piece is not None), (seed, changes)
        aside = next(e for e in changes if e.piece is not None and e.sq not in (chess.D2, chess.C2, chess.E1))
        assert aside.piece == "r", (seed, aside)
        touched += "j'adoube before the move" in habits[0]
        c2_empties = next(e.t for e in changes if e.sq == chess.C2 and e.piece is None)
        before_its_square_empties += aside.t < c2_empties
    assert before_its_square_empties > 5 and touched > 5
