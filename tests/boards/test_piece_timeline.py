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


def test_the_capturing_piece_is_named_on_its_way_and_on_its_square_before_an_adjustment() -> None:
    """Ra1xa5, slid over a2-a4, landing with a bounce and straightened after the move, the knight taken first or
    last: every piece sensed on a2-a5 is the rook, but the knight's own contacts bouncing as it is lifted (within
    a few ms of its lift). Before, a placement before the last one on a5 was named after the piece lifted from
    a5, the knight (a DGT or Chessnut board reported the black knight back on a5 for the 0.3-0.6 s the rook rested
    before its adjustment), and a slide square after the piece lifted last (the knight, when taken after the rook
    was lifted)."""
    start = chess.Board("4k3/8/8/n7/8/8/8/R3K3 w - - 0 1")
    move = chess.Move.from_uci("a1a5")
    style = hands.Style(adjust=1.0, slide=1.0, bounce=0.5, chatter=0.5, promote_record=False, overlap=0.0)
    path = (chess.A2, chess.A3, chess.A4, chess.A5)
    rook_on_the_way = bounced = 0
    for seed in range(40):
        habits: list[list[str]] = []
        events = piece_timeline(start, [move], random.Random(seed), style, habits=habits)
        assert "adjusted after the move" in habits[0], habits
        changes = [e for e in events if isinstance(e, Change)]
        for k, e in enumerate(changes):
            if e.sq not in path or e.piece is None:
                continue
            last = next((c for c in reversed(changes[:k]) if c.sq == e.sq), None)
            if last is not None and last.piece is None and e.t - last.t <= 8 and e.sq == chess.A5 and e.piece == "n":
                bounced += 1        # the knight's contacts as it is lifted
                continue
            assert e.piece == "R", (seed, habits[0], changes)
            rook_on_the_way += e.sq != chess.A5
    assert rook_on_the_way > 10 and bounced > 3


def test_a_piece_knocked_onto_a_square_is_named_as_itself_even_where_the_moving_piece_crossed() -> None:
    """...Rf5-h5 slid across g5, the sleeve knocking the g6 pawn off as the rook comes in: where the pawn falls
    (2-30 ms after its lift) the board names the pawn, also on g5, which the rook had just crossed. Before, g5 was
    named after the piece last lifted from it, the rook: a Chessnut board reported two black rooks (bench game
    104: Rg5 published for Rh5)."""
    start = chess.Board("4k3/8/6p1/5r2/8/8/8/4K3 b - - 0 1")
    move = chess.Move.from_uci("f5h5")
    style = hands.Style(sleeve=1.0, slide=1.0, promote_record=False, chatter=0.0, bounce=0.0, overlap=0.0)
    fallen_on_g5 = 0
    for seed in range(120):
        habits: list[list[str]] = []
        events = piece_timeline(start, [move], random.Random(seed), style, habits=habits)
        if "knocked onto a square" not in habits[0]:
            continue
        changes = [e for e in events if isinstance(e, Change)]
        knocked_at = next(e.t for e in changes if e.sq == chess.G6 and e.piece is None)
        fallen = next(e for e in changes if e.piece is not None and e.t >= knocked_at and e.sq != chess.H5)
        assert fallen.t - knocked_at <= 30 and fallen.piece == "p", (seed, changes)
        fallen_on_g5 += fallen.sq == chess.G5
    assert fallen_on_g5 > 2
