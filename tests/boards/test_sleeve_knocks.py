"""A sleeve knocking a piece as the hand that made a move leaves (docs/hands.md): the piece next to the landing
square is lifted within a board report of that move, falls off the board or onto an empty neighbouring square,
and is put back a moment later. Neither is the next mover's touch (4.3 binds deliberate touches), and a piece
fallen where it could move is not his move: such an answer waits ``KNOCK_HOLD_MS`` before it is made, and one
left standing then is made with the time it showed (docs/engine.md)."""

from __future__ import annotations

import chess

from tests.boards.test_fast_replies import codes, final_line, lift, moves_of, place
from tests.boards.test_fast_replies import play as play_from
from touchmove.records import Clock, Record, Snapshot
from touchmove.rules import Event
from touchmove.rules.identity import answer_begun_past_knock, made_with_hands
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


def play_unnamed(start: chess.Board, recs: list[Record]) -> list[Event]:
    """Feed ``start`` as a board that names no pieces reports it, then ``recs``, with a 300 ms settle time."""
    return play_from(recs, start, settle_ms=300, named=False)


#: DGT, harder hands (game 55 of the bench): Black plays ...c5; White's hand, coming for Rd4-d6 at once, knocks the
#: pawn off c5 243 ms after it landed (within the settle time, before ...c5 was made) and the rook lands next to
#: it; the pawn is put back 1.4 s later.
C5_RD6 = chess.Board("r3r1k1/p4pp1/b1p2n1p/1p3P2/2pRP3/P1N2N1P/1PP3P1/2KR4 b - - 0 21")


def test_a_move_whose_piece_the_answering_hand_knocks_off_is_made_then_the_answer() -> None:
    """Named pieces: ...c5 and Rd6, no alert. Before: a lost-changes search invented Kh8 Rd8 Kg8 R8d6 with the
    pawn read as still in Black's hand, and the game went wrong from there."""
    events = play_from([lift(1000, "c6"), place(1030, "c5", "p"), lift(1273, "c5"), lift(1308, "d4"),
                        place(1480, "d6", "R"), place(2846, "c5", "p")], C5_RD6)
    assert moves_of(events) == ["c5", "Rd6"]
    assert codes(events) == []
    assert [e.t for e in events if e.type == "move"] == [1030, 1480]


def test_the_same_on_a_board_that_names_no_pieces() -> None:
    """Occupancy only: ...c5, then Rd6 made with the knocked pawn still off (no board_mismatch while it is put
    back within KNOCK_HOLD_MS). Before: board_mismatch, then both moves when the pawn came back."""
    events = play_unnamed(C5_RD6, [lift(1000, "c6"), place(1030, "c5"), lift(1273, "c5"), lift(1308, "d4"),
                                   place(1480, "d6"), place(2846, "c5")])
    assert moves_of(events) == ["c5", "Rd6"]
    assert codes(events) == []


def test_a_piece_knocked_off_and_left_off_is_a_mismatch_after_the_hold() -> None:
    """The pawn is not put back: the board_mismatch comes, KNOCK_HOLD_MS after it went."""
    events = play_unnamed(C5_RD6, [lift(1000, "c6"), place(1030, "c5"), lift(1273, "c5"), lift(1308, "d4"),
                                   place(1480, "d6"), lift(9000, "a8"), place(9200, "a8")])
    assert moves_of(events) == ["c5", "Rd6"]
    assert "board_mismatch" in codes(events)


def test_the_queen_that_could_go_there_is_the_move_not_the_king_with_the_queen_knocked() -> None:
    """Qd1-e2, the king on e1 lifted 31 ms after the queen landed and put back: Qe2, never Ke2 (the queen could
    make the move itself, so it is no knocked piece)."""
    start = chess.Board("r1bq1rk1/ppp2ppp/2np1n2/2b2PN1/2B1PB2/2N5/PPP3PP/R2QK2R w KQ - 6 11")
    for named in (True, False):
        recs = [lift(1000, "d1"), place(1221, "e2", "Q" if named else None), lift(1252, "e1"),
                place(1826, "e1", "K" if named else None)]
        events = play_from(recs, start) if named else play_unnamed(start, recs)
        assert [e.san for e in events if e.type in ("move", "move_amended")] == ["Qe2"], named  # type: ignore[attr-defined]


def test_a_capture_with_a_piece_knocked_onto_a_square_it_could_reach_waits_for_the_board() -> None:
    """Nd2xe4, the sleeve knocking the d4 pawn onto c4 (where the knight could also go) just before the knight
    lands; the pawn goes back to d4 0.7 s later. Nxe4, never Nc4 with the d4 pawn read as knocked off."""
    start = chess.Board("2r2rk1/4q1pp/p1nbbp2/1p1p4/nP1Pp3/PN2P1P1/3N1PBP/B1RQ1RK1 w - - 0 19")
    events = play_unnamed(start, [lift(1000, "d2"), lift(1058, "e4"), lift(1212, "d4"), place(1231, "c4"),
                                  place(1332, "e4"), lift(1987, "c4"), place(2038, "d4")])
    assert [e.san for e in events if e.type in ("move", "move_amended")] == ["Nxe4"]  # type: ignore[attr-defined]


def test_a_piece_that_touched_down_and_moved_on_is_no_piece_knocked_off() -> None:
    """DGT game 26 of the bench: ...Bc5 touches down on f2 and slides on to g1 as White's king answers Kf3, the
    board naming the bishop on g1. ...Bg1 Kf3: not ...Bf2 with the bishop read as knocked onto g1 by the king's
    hand (the bishop could go to g1 itself)."""
    start = chess.Board("8/8/5k2/2b1p3/4P3/6P1/PP2K1Pp/7Q b - - 5 43")
    events = play_from([lift(1000, "c5"), place(2409, "f2", "b"), lift(2644, "e2"), lift(2682, "f2"),
                        place(2682, "g1", "b"), place(2861, "f3", "K")], start)
    assert moves_of(events) == ["Bg1", "Kf3"]


def test_a_piece_of_the_movers_own_knocked_onto_a_square_is_not_read_as_his_move_there() -> None:
    """ChessLink game 271 of the bench: ...b7-b6, the sleeve knocking Black's c6 pawn onto b5; the board reports
    the pawn on b5 (and c6 empty) 430 ms before it reports b6. Not ...b5 with c6 read as knocked off (then amended
    to ...b6 with moved_after_release): ...b6."""
    start = chess.Board("r1bqkbnr/ppp2ppp/2p5/4p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 0 1")
    events = play_from([lift(1000, "b7"), lift(1860, "c6"), place(1860, "b5", "p"), place(2294, "b6", "p"),
                        lift(2475, "b5"), place(2475, "c6", "p")], start)
    assert [e.san for e in events if e.type in ("move", "move_amended")] == ["b6"]  # type: ignore[attr-defined]
    assert "moved_after_release" not in codes(events)


#: Black to play ...Ne5 into White's knight on f3, White's pawn on d5 beside e5 (DGT game 297 of the bench).
NE5_NXE5 = chess.Board("r1bqkb1r/pp2pp1p/1nnp2p1/3P4/8/5N2/PPP1BPPP/RNBQ1RK1 b kq - 0 8")


def test_a_recapture_faster_than_the_settle_time_with_its_own_pawn_knocked_is_no_lost_change() -> None:
    """...Ne5 rests 150 ms, White's knight takes it at once, and White's sleeve knocks his own d5 pawn off as it
    lands (the scan reports d5 gone before e5's new piece) and puts it back 1.1 s later; then ...dxe5. The pieces
    show ...Ne5 Nxe5 made with one piece off next to where the answer landed: a hand, never a second ply. Before: a
    lost-changes search (changes_lost) recovered ...Ne5 Nxe5 among other lines."""
    events = play_from([lift(1000, "c6"), place(1800, "e5", "n"), lift(1950, "e5"), lift(2200, "f3"),
                        lift(2360, "d5"), place(2364, "e5", "N"), place(3470, "d5", "P"),
                        lift(6000, "e5"), lift(6100, "d6"), place(6200, "e5", "p")], NE5_NXE5)
    assert moves_of(events) == ["Ne5", "Nxe5", "dxe5"]
    assert "changes_lost" not in codes(events)


def test_a_move_taken_where_it_landed_by_a_hand_that_knocked_a_piece_is_made_with_hands() -> None:
    """The pieces after ...Ne5 Nxe5 but for one piece off: beside e5, a hand; away from it, plies to search."""
    after = NE5_NXE5.copy()
    for san in ("Ne5", "Nxe5"):
        after.push_san(san)
    pieces = {sq: piece.symbol() for sq, piece in after.piece_map().items()}
    beside = {sq: letter for sq, letter in pieces.items() if sq != chess.D5}
    away = {sq: letter for sq, letter in pieces.items() if sq != chess.A2}
    assert made_with_hands(NE5_NXE5, beside)
    assert not made_with_hands(NE5_NXE5, away)


#: Black to play ...Rxe1+, White's other rook on d1 beside e1 (ChessLink game 43 of the bench).
RXE1 = chess.Board("2r1r1k1/1p3ppp/p2p1n2/3P4/2P5/1P1B4/P5PP/3RR2K b - - 0 21")


def test_a_piece_knocked_aside_while_a_capture_is_under_way_is_no_lost_change() -> None:
    """Black takes the e1 rook off, lifts his own from e8, and his sleeve knocks the d1 rook onto c1 before his
    rook lands on e1; White puts it back and recaptures. The pieces show ...Rxe1+ under way with one piece knocked
    onto a square next to its own: a hand. Before: a lost-changes search took ...Re7 Rc1 (changes_lost)."""
    events = play_from([lift(1000, "e1"), lift(1500, "e8"), lift(2100, "d1"), place(2100, "c1", "R"),
                        place(2500, "e1", "r"), lift(3000, "c1"), place(3000, "d1", "R"),
                        lift(5000, "d1"), lift(5000, "e1"), place(5030, "e1", "R")], RXE1)
    assert moves_of(events) == ["Rxe1+", "Rxe1"]
    assert "changes_lost" not in codes(events)


#: Black to play ...Kf4, White to answer gxh5 past Black's g6 pawn (Chessnut game 162 of the bench).
KF4_GXH5 = chess.Board("8/4Q3/6p1/5pkq/6P1/1P2N3/P2PnrBP/7K b - - 1 39")


def test_a_piece_that_cannot_move_lifted_after_recovered_plies_contradicts_none_of_them() -> None:
    """...Kf4 lands, Black's sleeve knocking White's g4 pawn onto f3; it is put back, White lifts it at once with
    the h5 queen to take it, his own sleeve knocking the g6 pawn off: ...Kf4 gxh5 are recovered (the pieces also
    fit gxh5 with ...gxh5 under way). Black then straightens his king, which has no legal move, and plays ...Rf1+.
    The lifted king contradicts no recovered ply. Before: searched again, ...Kh6 gxh5 taken for them."""
    events = play_from([lift(1002, "g5"), place(1102, "f4", "k"), lift(1162, "g4"), place(1162, "f3", "P"),
                        lift(2002, "f3"), place(2102, "g4", "P"), lift(2202, "g4"), lift(2302, "h5"),
                        lift(2402, "g6"), place(2602, "h5", "P"), place(3702, "g6", "p"),
                        lift(5800, "f4"), place(6200, "f4", "k"), lift(8000, "f2"), place(8100, "f1", "r")],
                       KF4_GXH5, SETTLE_MS)
    assert moves_of(events)[-1] == "Rf1+"
    assert final_line(events) == ["Kf4", "gxh5", "Rf1+"]
    assert "takeback" not in [e.type for e in events]



#: Black to play ...Bxa2, White to answer Rd2 past Black's queen on c3 (Chessnut game 70 of the bench).
BXA2_RD2 = chess.Board("1k1r2b1/ppp4p/6p1/2P5/1n1N4/2q3P1/P3R1BP/3K2BQ b - - 0 18")


def test_an_answer_begun_by_a_hand_that_knocks_a_piece_beside_where_it_goes_is_no_lost_change() -> None:
    """...Bxa2 with its victim pushed onto b1 and then taken off; White lifts his rook from e2 at once and his
    sleeve knocks Black's queen off c3 (next to d2, where the rook goes) in the same scan; Rd2, and the queen put
    back. The pieces show ...Bxa2 made with the answer begun and one piece off beside a square the lifted rook
    can go to: a hand, not plies mixed in a scan. Before: a lost-changes search (changes_lost) recovered ...Bxa2
    Rd2 among four other rook moves."""
    events = play_from([lift(1000, "g8"), lift(2000, "a2"), place(2000, "b1", "P"), place(2100, "a2", "b"),
                        lift(2700, "b1"), lift(2800, "e2"), lift(2800, "c3"), place(3000, "d2", "R"),
                        place(4200, "c3", "q")], BXA2_RD2, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Bxa2", "Rd2"]
    assert "changes_lost" not in codes(events)


def test_an_answer_begun_with_a_piece_off_far_from_where_it_can_go_is_no_knock() -> None:
    """The same pieces but for the piece off: beside a square the lifted rook can go to, a knock; the h7 pawn, away
    from every square it can reach, none (plies to search)."""
    after = BXA2_RD2.copy()
    after.push_san("Bxa2")
    pieces = {sq: piece.symbol() for sq, piece in after.piece_map().items() if sq != chess.E2}
    beside = {sq: letter for sq, letter in pieces.items() if sq != chess.C3}
    assert answer_begun_past_knock(BXA2_RD2, beside) == (chess.A2, chess.E2, chess.C3, None)
    # the bishop on a2, lifted with the rook that can take it there: the capture's victim, no knock
    victim = {sq: letter for sq, letter in pieces.items() if sq != chess.A2}
    assert answer_begun_past_knock(BXA2_RD2, victim) is None
    assert answer_begun_past_knock(BXA2_RD2, {sq: letter for sq, letter in pieces.items() if sq != chess.H7}) is None


def test_a_piece_lifted_well_after_the_answer_begun_is_no_knock_of_that_hand() -> None:
    """The same, but Black's queen leaves c3 180 ms after the rook was lifted (before ...Bxa2 has rested): no knock
    of the hand carrying the rook (the sleeve knocks as the hand carries the piece, ``KNOCKED_CARRYING_MS``), so
    the plies are searched (changes_lost); 100 ms after, a knock."""
    def recs(c3_lifted: int) -> list[Record]:
        return [lift(1000, "g8"), lift(2000, "a2"), place(2000, "b1", "P"), place(2100, "a2", "b"),
                lift(2700, "b1"), lift(2800, "e2"), lift(c3_lifted, "c3"), place(3300, "d2", "R"),
                place(4500, "c3", "q")]
    assert "changes_lost" in codes(play_from(recs(2980), BXA2_RD2, settle_ms=SETTLE_MS))
    knocked = play_from(recs(2900), BXA2_RD2, settle_ms=SETTLE_MS)
    assert "changes_lost" not in codes(knocked)
    assert moves_of(knocked) == ["Bxa2", "Rd2"]


def test_the_same_pieces_after_a_blind_spell_are_searched() -> None:
    """The same changes told by a snapshot after the link was blind (the board's changes lost): by the pieces they
    may be plies lost (...dxe5 dxe5 before ...O-O-O looks so), and the search runs (changes_lost)."""
    after = BXA2_RD2.copy()
    after.push_san("Bxa2")
    for sq in (chess.E2, chess.C3):
        after.remove_piece_at(sq)
    events = play_from([lift(1000, "g8"), Snapshot(t=3000, occ=after.occupied, type="snapshot",
                                                   pieces=after.board_fen())], BXA2_RD2, settle_ms=SETTLE_MS)
    assert "changes_lost" in codes(events)


#: White to play Ne4, Black to take it at once (Chessnut game 147 of the bench).
NE4_NXE4 = chess.Board("r2r2k1/pp1bqppp/2n1pn2/2b5/2P5/5NP1/PB1NPPBP/RQ3RK1 w - - 6 13")


def test_a_move_taken_where_it_landed_with_its_piece_pushed_aside_is_no_lost_change() -> None:
    """Ne4 lands in the scan that shows d2 empty; within 100 ms Black lifts his f6 knight, pushes White's onto e5
    and lands on e4, and takes the pushed knight off 300 ms later. The pieces show Ne4 ...Nxe4 with the victim
    still beside its square: a victim pushed aside, never plies lost. Before: a lost-changes search recovered
    Ne5 ...Ne4 Ndf3 (changes_lost), then the press read ...Nxe4."""
    events = play_from([lift(1000, "d2"), place(1000, "e4", "N"), lift(1100, "e4"), lift(1100, "f6"),
                        place(1200, "e5", "N"), place(1300, "e4", "n"), lift(1600, "e5")], NE4_NXE4,
                       settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Ne4", "Nxe4"]
    assert "changes_lost" not in codes(events)


#: Black to play ...b6, White to answer b4 at once (Chessnut game 266 of the bench).
B6_B4 = chess.Board("r1bq1rk1/pp1nbppp/2p1pn2/2Pp4/3P1B2/2NBPN2/PP3PPP/R2QK2R b KQ - 1 8")


def test_an_answer_begun_by_a_hand_that_knocks_a_piece_onto_a_square_is_no_lost_change() -> None:
    """...b6 lands; White lifts his b2 pawn before it has rested and his sleeve knocks his own c5 pawn onto b5
    (next to b4, where the pawn goes) in the next scan; b4, and the knocked pawn put back. The pieces show ...b6
    made with the answer begun and one piece knocked onto a square next to its own: a hand. Before: a lost-changes
    search recovered five plies (...b6 b4 ...Bxc5 b5 ...Be7, changes_lost), then a takeback."""
    events = play_from([lift(1000, "b7"), place(1100, "b6", "p"), lift(1200, "b2"), lift(1300, "c5"),
                        place(1300, "b5", "P"), place(1500, "b4", "P"), lift(2700, "b5"), place(2700, "c5", "P")],
                       B6_B4, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["b6", "b4"]
    assert "changes_lost" not in codes(events)
    assert "takeback" not in [e.type for e in events]


def test_a_capture_begun_by_a_hand_that_knocks_a_piece_beside_it_is_no_lost_change() -> None:
    """...Kf4, its sleeve knocking White's g4 pawn onto f3 and the pawn put back; then gxh5 begun at once: the
    pawn lifted, the h5 queen taken off, Black's g6 pawn (next to h5) knocked off by that hand, gxh5 landed and g6
    put back. The pieces show ...Kf4 made with the capture under way and one piece off beside where it goes: a
    hand. Before: a lost-changes search recovered ...Kf4 gxh5 (changes_lost)."""
    events = play_from([lift(1000, "g5"), place(1100, "f4", "k"), lift(1160, "g4"), place(1160, "f3", "P"),
                        lift(2000, "f3"), place(2100, "g4", "P"), lift(2200, "g4"), lift(2300, "h5"),
                        lift(2400, "g6"), place(2600, "h5", "P"), place(3700, "g6", "p")], KF4_GXH5,
                       settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Kf4", "gxh5"]
    assert "changes_lost" not in codes(events)


#: White to play Bh5, sliding from f3 across g4 (Chessnut game 245 of the bench).
BH5 = chess.Board("r3r1k1/6b1/2p1b1q1/p1B1p1p1/2P1Pp2/1P3B2/P3QN2/3R1RK1 w - - 0 28")
#: Black to play ...Qg5, sliding from d8 across e7 and f6 (Chessnut game 185 of the bench).
QG5 = chess.Board("r2qkb1r/pp3pp1/2b1p2p/4P3/2BB2Q1/8/P1P2PPP/R4RK1 b kq - 2 15")


def test_a_piece_knocked_by_a_hand_still_sliding_on_is_no_answer() -> None:
    """The bishop slides f3-g4-h5: it shows on g4 for a scan, and the sleeve, going on to h5, knocks Black's queen
    from g6 onto f7 (a square the queen could go to) in the next; the bishop lands on h5 and the queen is put back.
    A one-step answer from next to the line the piece slides on, its piece lifted within the knock window of the
    move showing, does not make the move at once: Bh5, no ...Qf7. Before: Bg4 ...Qf7 Bh5 ...Qg6 were published."""
    events = play_from([lift(1000, "f3"), place(1100, "g4", "B"), lift(1200, "g6"), place(1200, "f7", "q"),
                        lift(1260, "g4"), place(1300, "h5", "B"), lift(2100, "f7"), place(2100, "g6", "q")],
                       BH5, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Bh5"]


def test_the_same_knock_further_along_the_line() -> None:
    """...Qd8-g5 shows on e7, and the sleeve knocks White's queen from g4 (next to g5, two squares on) onto f5 as
    the hand goes on: ...Qg5, no Qf5. Before: ...Qe7 Qf5 ...Qg5 Qg4 were published."""
    events = play_from([lift(1000, "d8"), place(1100, "e7", "q"), lift(1200, "g4"), place(1200, "f5", "Q"),
                        lift(1260, "e7"), place(1300, "g5", "q"), lift(2500, "f5"), place(2500, "g4", "Q")],
                       QG5, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Qg5"]


def test_a_quick_answer_beside_a_slide_that_stopped_is_made() -> None:
    """The bishop stops on g4 and Black answers ...Qf7 at once, for good: both made (the answer only waits for the
    settle time)."""
    events = play_from([lift(1000, "f3"), place(1100, "g4", "B"), lift(1200, "g6"), place(1200, "f7", "q")],
                       BH5, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["Bg4", "Qf7"]


DGT_SETTLE_MS = 300     # the bridge's for a DGT board (a field update per change, a scan every 200-250 ms)
#: White to play Re3 (DGT harder hands game 128 of the bench): Black's rook on d2 stands next to d3, on the line
#: the rook slides along.
RE3 = chess.Board("6k1/pp3p1p/2pq2p1/4b3/2P5/P4RPP/1P1r1PB1/4Q1K1 w - - 5 35")
#: White to play Qd3 (DGT fast replies game 257): Black's queen on e6 stands next to d5 and d6, on the queen's line.
QD3 = chess.Board("8/8/4qk2/4p1pp/5p2/6P1/5P2/3Q2K1 w - - 2 67")


def test_an_answer_beside_the_line_is_made_when_the_slide_does_not_go_on() -> None:
    """Re3 lands and Black answers ...Rd1 at once (d2 lifted 22 ms after e3 showed, inside the knock window),
    straightens the rook on d1, and White plays Qf1 with no rest between. The rook on e3 never moved on: the answer
    is held only for the knock window after its lift, and the next change past it makes Re3 and matches ...Rd1.
    Before (the answer held to the rest): three plies at once, a board_mismatch and lost changes. (The rook lifted
    from d1 after ...Rd1 is White's touch to a board that senses no hands: touch_move, 4.3.3, for Qf1 not Qxd1.)"""
    events = play_from([lift(1000, "f3"), place(1000, "e3", "R"), lift(1022, "d2"), place(1293, "d1", "r"),
                        lift(1529, "d1"), place(1764, "d1", "r"), lift(2010, "e1"), place(2013, "f1", "Q")],
                       RE3, settle_ms=DGT_SETTLE_MS)
    assert moves_of(events) == ["Re3", "Rd1", "Qf1"]
    assert codes(events) == ["touch_move"]


def test_a_bullet_answer_beside_the_line_then_the_slider_moving_again() -> None:
    """Qd3 lands, ...Qf5 comes 150 ms later (from e6, next to the queen's line), and White lifts the queen from d3
    again 317 ms after the e6 lift, past the knock window, to play Qd6+: Qd3 Qf5 Qd6+, not Qd6 with a knocked
    queen (e6 refilled later is ...Qe6, the game's next ply)."""
    events = play_from([lift(1000, "d1"), place(2047, "d3", "Q"), lift(2199, "e6"), place(2233, "f5", "q"),
                        lift(2516, "d3"), place(3289, "d6", "Q"), lift(3323, "f5"), place(3323, "e6", "q")],
                       QD3, settle_ms=DGT_SETTLE_MS)
    assert moves_of(events) == ["Qd3", "Qf5", "Qd6+", "Qe6"]


#: White to play N4f5+ (Chessnut harder hands game 238): both knights, on d4 and d6, can go to f5.
N4F5 = chess.Board("6r1/3q1pk1/1n1Np2p/3nP2Q/pp1N4/6P1/1P3P1P/2R3K1 w - - 4 31")


def test_a_piece_the_board_names_where_a_victim_would_be_pushed_is_no_victim_pushed_aside() -> None:
    """White straightens the knight on d6, lifts the one on d4, and his sleeve knocks Black's e6 pawn into the air
    just before the knight lands on f5 (the board names a white knight there); the pawn is put back, exf5 and
    Nxf5+ follow. The board at rest shows d4 and e6 empty and a knight on f5: not ...Nxe6 under way with the pawn
    pushed onto f5 first (a pushed victim would be named a black pawn there) but N4f5+, the pawn knocked. Before,
    the capture under way was waited for, and the lost-changes search took the other knight: N6f5+ exf5 Nxf5+."""
    events = play_from([lift(1000, "d6"), place(1600, "d6", "N"), lift(2300, "d4"), lift(3600, "e6"),
                        place(3700, "f5", "N"), lift(5000, "f5"), place(5000, "e6", "p"), lift(5200, "e6"),
                        place(5300, "f5", "N"), lift(5330, "f5"), place(5330, "f6", "N"), place(5500, "f5", "p"),
                        lift(5700, "f6"), lift(5800, "d6"), lift(5900, "f5"), place(5930, "f5", "N")],
                       N4F5, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["N4f5+", "exf5", "Nxf5+"]
    assert "changes_lost" not in codes(events)


#: Black to play ...e5 (Chessnut fast replies game 70 of the bench, Chess960): White's pawn on f4 takes it at once.
E5_FXE5 = chess.Board("1k1rrbbq/ppp1p2p/1nn3p1/2Np4/5P2/1N4P1/PPPP2BP/2KRR1BQ b - - 1 9", chess960=True)


def test_a_pawn_named_further_on_and_taken_at_once_is_no_piece_knocked() -> None:
    """...e7-e5 slides across e6 (one status names the pawn on e6, the next on e5), and White's hand takes it off
    e5 100 ms later, then lifts the f4 pawn and puts it on e5: ...e5 fxe5, then ...Rxe5. The pawn named on e5,
    Black's own, is no answer landing beside a knocked pawn (the board names the piece as it landed, though it is
    off now). Before: ...e6 made as knocked off, then lost changes searched over and over."""
    events = play_from([lift(1000, "e7"), place(1100, "e6", "p"), lift(1200, "e6"), place(1200, "e5", "p"),
                        lift(1300, "e5"), lift(1700, "f4"), place(1900, "e5", "P"), lift(2000, "e8"),
                        place(2400, "e6", "r"), lift(2500, "e6"), place(2600, "e5", "r")],
                       E5_FXE5, settle_ms=SETTLE_MS)
    assert moves_of(events) == ["e5", "fxe5", "Rxe5"]
    assert "changes_lost" not in codes(events)


#: White to play Qxf6 (DGT harder hands game 194 of the bench), Black recaptures gxf6.
QXF6 = chess.Board("3r1rk1/pp1q1pp1/2n2n2/4p3/2P3bp/PPBpPQP1/3N1PBP/2R1R1K1 w - - 2 19")


def test_a_victim_pushed_onto_a_square_the_answer_could_reach_is_no_answer_there() -> None:
    """Qxf6 pushes the f6 knight onto g5; Black lifts the g7 pawn to recapture, takes the knight off g5, pushes
    the queen onto e7, puts the pawn on f6 and takes the queen off: Qxf6 gxf6, then Ne4. The board names a black
    knight on g5 when the g7 pawn is lifted: no ...g5 (a pawn would be named there). Before, ...g5 was made and
    amended to gxf6 after a board_mismatch (the pieces: a pawn on f6 where the queen was expected)."""
    events = play_from([lift(1000, "f3"), lift(1145, "f6"), place(1175, "f6", "Q"), place(1418, "g5", "n"),
                        lift(1797, "g7"), lift(1854, "g5"), lift(2041, "f6"), place(2071, "f6", "p"),
                        place(2071, "e7", "Q"), lift(2896, "e7"), lift(5895, "d2"), place(6733, "e4", "N")],
                       QXF6, settle_ms=DGT_SETTLE_MS)
    assert moves_of(events) == ["Qxf6", "gxf6", "Ne4"]
    assert not [e for e in events if e.type == "move_amended"]
    assert "board_mismatch" not in codes(events)


#: Black to play ...Kb5 (DGT harder hands game 82 of the bench): White's a6 pawn stands next to b5.
KB5 = chess.Board("8/8/PB1K4/7r/k1p5/2Pb4/5R2/8 b - - 0 78")


def test_a_knocked_piece_put_back_then_moved_there_is_made_when_it_moved() -> None:
    """...Kb5 knocks the a6 pawn onto a7 (a square it could move to), the pawn is put back on a6 1.1 s later, and
    White plays a7 for real 1.3 s after that: Kb5 a7 Be4 with no alert. The board showed the game position again
    in between (the knock undone), so a7 is made when it showed again; made with the time the knock first showed
    it, the pawn's lift and return were read as Black's touches after a7, a touch_out_of_turn at ...Be4."""
    events = play_from([Clock(908, chess.WHITE), lift(1000, "a4"), place(1196, "b5", "k"), lift(1394, "a6"),
                        place(1394, "a7", "P"), lift(2494, "a7"), place(2747, "a6", "P"), lift(4037, "a6"),
                        place(4037, "a7", "P"), Clock(4808, chess.WHITE), lift(6818, "d3"), place(7259, "e4", "b")],
                       KB5, settle_ms=DGT_SETTLE_MS)
    assert moves_of(events) == ["Kb5", "a7", "Be4"]
    assert codes(events) == []


#: Black to play ...Rc2 (DGT harder hands game 279 of the bench), the rook sliding down the c-file past b2.
RC2 = chess.Board("2r5/3q2pk/1p1r3p/p2p2RR/3PpP1Q/P3P3/1P3PK1/8 b - - 14 35")


def test_a_piece_named_further_on_after_it_touched_down_is_no_move_knocked_off() -> None:
    """...Rc8-c2 touches down on c3, is named on c6 next (the scan's order), leaves c6, and its sleeve knocks the
    b2 pawn onto b3 before the rook lands on c2; the pawn is put back, then Rg3. The rook named on another square
    it could go to after it touched down on c3 moved on: no ...Rc3 knocked off with b3 as the answer (the rook on
    c6 is no longer named when the board rests, but it was). Before: ...Rc3 b3 ...Rc2 and a board_mismatch."""
    events = play_from([lift(1000, "c8"), place(1000, "c3", "r"), lift(1152, "c3"), place(1152, "c6", "r"),
                        lift(1293, "c6"), lift(1392, "b2"), place(1392, "b3", "P"), place(1875, "c2", "r"),
                        lift(2456, "b3"), place(2709, "b2", "P"), lift(4654, "g5"), place(4711, "g3", "R"),
                        lift(4941, "g3"), place(5368, "g3", "R")], RC2, settle_ms=DGT_SETTLE_MS)
    assert moves_of(events) == ["Rc2", "Rg3"]
    assert "board_mismatch" not in codes(events)
