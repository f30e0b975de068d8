"""Pieces only lifted, on a board that names its pieces, after plies were recovered (changes_lost): hands of
either side, which contradict no ply the board showed made, but may be what shows recovered plies misread (the
search again, :meth:`touchmove.rules.unseen_play.UnseenPlay.recover_again`)."""

from __future__ import annotations

import chess

from tests.boards.test_fast_replies import final_line, lift, place, play


def test_pieces_only_lifted_after_plies_recovered_do_not_take_back_a_ply_the_board_showed() -> None:
    """Drop 20 s, game 247 of the bench, the records the memory replayed: Rxd8+ Rxd8 Rc1 recovered (d8's changes
    merged), Nc4 and Bf4 shown, then Black lifts his e7 bishop and White the f4 bishop (...Bd6 Bxd6 made, d6's
    changes merged). Bc5 for Bf4 with ...Bxc5 under way leaves the same squares empty: the engine searched again,
    took back five plies and published Bc5, never shown (the bishop was named on f4). Only lifts from the plies as
    made contradict nothing: the rook landing on d6 brings ...Bd6 Bxd6 Rxd6, Bf4 stands."""
    start = chess.Board("2kr3r/pp2b1pp/1np2p2/8/4P3/PbN1B3/1P2BPPP/3R1RK1 w - - 5 17")
    events = play([lift(1600, "d1"), lift(4600, "f1"), lift(4600, "h8"), place(4600, "c1", "R"),
                   lift(7600, "b6"), place(7600, "c4", "n"), lift(9100, "e3"), place(9100, "f4", "B"),
                   lift(10600, "e7"), lift(15100, "f4"), lift(16600, "d8"), place(18100, "d6", "r"),
                   lift(20600, "c4"), lift(21400, "e2"), place(21400, "c4", "B")], start=start)
    assert final_line(events) == ["Rxd8+", "Rxd8", "Rc1", "Nc4", "Bf4", "Bd6", "Bxd6", "Rxd6", "Bxc4"]
    assert not [e for e in events if e.type == "takeback"]


def test_recovered_plies_the_board_then_shows_misread_are_searched_again_though_pieces_are_only_lifted() -> None:
    """Chessnut, harder hands (game 193 of the bench): axb4 axb4 Rxc8 Rxc8 with the victims pushed aside, read as
    axb4 Rb8 Rc8 axb4, then Rxb8 Rc8 Rb7 (both recovered). White lifts the rook from b7 and his f1 rook: pieces only
    lifted, and the plies as made account for every piece told (the rooks named on b8 and b7), but they were
    recovered, not shown: the search again finds the plies played, and Rc1 Rxc1 follow (its victim pushed onto d1)."""
    start = chess.Board("2r4r/5pk1/4p3/p2pPpPp/1p1P1P1P/Pq6/1P1Q2K1/2R2R2 w - - 0 27")
    events = play([lift(1700, "a3"), lift(1800, "b4"), lift(2400, "a5"), place(2600, "b4", "p"),
                   lift(5300, "c1"), lift(5300, "c8"), place(5300, "b8", "r"), place(5400, "c8", "R"),
                   lift(6000, "b8"), lift(9700, "c8"), lift(9700, "h8"), place(9800, "b7", "R"),
                   place(9800, "c8", "r"), lift(10200, "b7"), lift(10300, "f1"), place(10600, "c1", "R"),
                   lift(10660, "c8"), place(10700, "d1", "R"), lift(10800, "c1"), place(10830, "c1", "r"),
                   lift(11400, "d1")], start=start, settle_ms=200)
    assert final_line(events) == ["axb4", "axb4", "Rxc8", "Rxc8", "Rc1", "Rxc1"]
