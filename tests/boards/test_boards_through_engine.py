"""The emulators and translators joined on a simulated clock (touchmove.sim.harness), read by the rules engine:
games come back, a rotated DGT board is turned, a result shown with the kings ends the game with no king move,
a promotion is read from the board."""

from __future__ import annotations

import random

import chess
import pytest

from tests.host.games import require_games
from touchmove.boards import dgt
from touchmove.records import Clock, Lift, Place, Record
from touchmove.rules import Engine, Event
from touchmove.sim import harness
from touchmove.sim.pieces import Change, ClockPress, piece_timeline

PROTOCOLS = ("dgt", "chesslink", "chessnut")


def engine_events(start: chess.Board, recs: list[Record], settle_ms: int = 200) -> list[Event]:
    eng = Engine(fen=None if start.fen() == chess.STARTING_FEN else start.fen(), settle_ms=settle_ms)
    return [e for r in recs for e in eng.feed(r)] + eng.finish()


def published(events: list[Event]) -> list[str]:
    moves: list[str] = []
    for e in events:
        if e.type in ("move", "move_amended"):
            del moves[e.ply - 1:]
            moves.append(e.uci)  # type: ignore[attr-defined]
        elif e.type == "takeback":
            del moves[e.ply - 1:]
    return moves


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shared_games_come_back_or_alert(protocol: str) -> None:
    """Every 40th shared game with the default hands: given back exactly, and never a wrong move unalerted."""
    games = require_games()[::40]
    exact = 0
    for i, (name, start, moves) in enumerate(games):
        run = harness.run(protocol, start, piece_timeline(start, moves, random.Random(i)), seed=i)
        assert run.translator is not None
        events = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
        got = published(events)
        if got == [m.uci() for m in moves]:
            exact += 1
        else:
            assert any(e.type == "alert" for e in events), f"{name}: a wrong game without an alert"
    assert exact >= len(games) - 2, f"{exact} of {len(games)} games exact"


def test_rotated_dgt_board_is_turned() -> None:
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1")]
    run = harness.run("dgt", chess.Board(), piece_timeline(chess.Board(), moves, random.Random(3)), rotated=True)
    assert published(engine_events(chess.Board(), run.records)) == [m.uci() for m in moves]
    # rotated from the start: said once (before, only a board turned later was)
    assert [line["detail"]["rotated"] for line in run.lines if line.get("alert") == "board_rotated"] == [True]
    plain = harness.run("dgt", chess.Board(), piece_timeline(chess.Board(), moves, random.Random(3)))
    assert not [line for line in plain.lines if line.get("alert") == "board_rotated"]


def test_result_shown_with_the_kings_is_a_board_claim() -> None:
    board = chess.Board()
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "e1e2", "e8e7")]
    events = piece_timeline(board, moves, random.Random(2))
    t = max(e.t for e in events) + 2000
    # both kings taken to the light centre squares: White won
    events += [Change(t, chess.E2, None), Change(t + 300, chess.E7, None), Change(t + 1400, chess.E4, "K"),
               Change(t + 2000, chess.D5, "k")]
    for protocol in PROTOCOLS:
        run = harness.run(protocol, board, sorted(events, key=lambda e: e.t))
        evs = engine_events(board, run.records)
        assert published(evs) == [m.uci() for m in moves], protocol
        ends = [e for e in evs if e.type == "game_end"]
        assert [(e.result, e.reason, e.by) for e in ends] == [  # type: ignore[attr-defined]
            ("1-0", "result shown with the kings", "board")], protocol


def test_promotion_is_read_from_the_board() -> None:
    start = chess.Board("8/3P4/8/8/8/k7/8/4K2R w - - 0 1")
    moves = [chess.Move.from_uci("d7d8"), chess.Move.from_uci("a3b2")]
    moves[0] = chess.Move(chess.D7, chess.D8, chess.KNIGHT)
    for protocol in PROTOCOLS:
        run = harness.run(protocol, start, piece_timeline(start, moves, random.Random(11)))
        promotes = [r for r in run.records if r.type == "promote"]
        assert [p.piece for p in promotes] == [chess.KNIGHT], protocol  # type: ignore[attr-defined]
        assert published(engine_events(start, run.records)) == ["d7d8n", "a3b2"], protocol


def test_dgt_clock_presses_are_told_as_read_late() -> None:
    """The board reads a DGT clock about once a second: each press comes with ``late_ms``, and [%clk] times still
    reach the plies."""
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6")]
    run = harness.run("dgt", chess.Board(), piece_timeline(chess.Board(), moves, random.Random(5)))
    presses = [r for r in run.records if isinstance(r, Clock)]
    assert presses and all(r.late_ms == dgt.CLOCK_READ_MS + dgt.CLOCK_AFTER_SCAN_MS for r in presses)
    events = engine_events(chess.Board(), run.records)
    assert published(events) == [m.uci() for m in moves]
    assert any(e.type == "clock" for e in events)
    assert not [e for e in events if e.type == "alert"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_board_claim_is_withdrawn_when_the_pieces_go_back_to_the_game(protocol: str) -> None:
    """The kings stood in the centre for two seconds, then put back on their squares, and play goes on: the
    claim (``game_end`` by the board) is withdrawn with ``game_resumed`` and the later plies are read."""
    board = chess.Board()
    first = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "e1e2", "e8e7")]
    events = piece_timeline(board, first, random.Random(2))
    t = max(e.t for e in events) + 2000
    events += [Change(t, chess.E2, None), Change(t + 300, chess.E7, None), Change(t + 600, chess.D4, "K"),
               Change(t + 900, chess.D5, "k"),
               Change(t + 3000, chess.D4, None), Change(t + 3200, chess.E2, "K"),
               Change(t + 3400, chess.D5, None), Change(t + 3600, chess.E7, "k")]
    after = board.copy()
    for m in first:
        after.push(m)
    more = [chess.Move.from_uci(u) for u in ("g1f3", "b8c6")]
    events += piece_timeline(after, more, random.Random(3), t=t + 6000)
    run = harness.run(protocol, board, sorted(events, key=lambda e: e.t))
    evs = engine_events(board, run.records)
    kinds = [e.type for e in evs if e.type in ("game_end", "game_resumed")]
    assert kinds == ["game_end", "game_resumed"], protocol
    assert published(evs) == [m.uci() for m in first + more], protocol
    assert not [e for e in evs if e.type == "alert" and e.code in ("touch_move", "illegal_move")], protocol  # type: ignore[attr-defined]


def test_a_result_piece_stood_and_taken_away_is_claimed_and_withdrawn() -> None:
    """DGT's result piece put on an empty square and taken away again: claimed, then withdrawn at once (the
    pieces never left the game)."""
    board = chess.Board()
    first = [chess.Move.from_uci(u) for u in ("d2d4", "d7d5")]
    events = piece_timeline(board, first, random.Random(4))
    t = max(e.t for e in events) + 2000
    events += [Change(t, chess.E4, "1-0"), Change(t + 2500, chess.E4, None)]
    run = harness.run("dgt", board, sorted(events, key=lambda e: e.t))
    evs = engine_events(board, run.records)
    assert [e.type for e in evs if e.type in ("game_end", "game_resumed")] == ["game_end", "game_resumed"]
    assert published(evs) == [m.uci() for m in first]


def test_a_dgt_clock_with_white_on_the_other_side_loses_no_press() -> None:
    """The clock set up the other way round (White's time and turn on the other side): the presses are the
    same as with it the right way round, each side's own time (before, all but the first were left out as read
    late, the side that pressed taken for the other)."""
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "d2d3", "f8c5")]
    events = piece_timeline(chess.Board(), moves, random.Random(5))
    plain = harness.run("dgt", chess.Board(), events, seed=5)
    swapped = harness.run("dgt", chess.Board(), events, seed=5, clock_swapped=True)
    presses = [(r.side, r.remaining) for r in plain.records if isinstance(r, Clock)]
    assert len(presses) >= len(moves) - 2
    # once two presses have shown which way round it is (the first may be taken for the other side's)
    assert [(r.side, r.remaining) for r in swapped.records if isinstance(r, Clock)][-5:] == presses[-5:]
    assert published(engine_events(chess.Board(), swapped.records)) == [m.uci() for m in moves]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("hold", [300, 600])
def test_an_adjustment_out_of_turn_on_a_board_that_names_its_pieces_is_no_move(protocol: str, hold: int) -> None:
    """White lifts his king 675 ms after his own move and puts it back (Black to move): a touch out of turn, no
    move (before: on a board that names its pieces, plies searched for the king in the hand, changes_lost with
    invented lines, and the game stopped)."""
    start = chess.Board("r3k2r/ppp2ppp/8/8/8/8/PPP2PPP/R3K2R w KQkq - 0 1")
    events = [Change(1000, chess.A2, None), Change(1300, chess.A3, "P"), ClockPress(1600, True, None),
              Change(1975, chess.E1, None), Change(1975 + hold, chess.E1, "K"),
              Change(4000, chess.H7, None), Change(4300, chess.H6, "p"), ClockPress(4700, False, None),
              Change(6000, chess.B2, None), Change(6300, chess.B3, "P"), ClockPress(6600, True, None)]
    run = harness.run(protocol, start, events, seed=hold)
    assert run.translator is not None
    evs = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(evs) == ["a2a3", "h7h6", "b2b3"]
    assert [e.code for e in evs if e.type == "alert"] == ["touch_out_of_turn"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_promotion_the_board_named_is_never_rewritten_by_a_later_new_piece(protocol: str) -> None:
    """cxb8=B read from the board's bishop; later a queen put on a8 0.67 s before the a7 pawn is lifted: a8=Q,
    and cxb8=B stays (before: rewritten to cxb8=Q with no alert, then board_mismatch)."""
    start = chess.Board("1n2k3/2P5/P7/8/8/8/8/4K3 w - - 0 1")
    sq = chess
    events = [Change(1000, sq.C7, None), Change(1150, sq.B8, None), Change(1500, sq.B8, "B"),
              ClockPress(1900, True, None), Change(3000, sq.E8, None), Change(3300, sq.D7, "k"),
              ClockPress(3700, False, None), Change(5000, sq.A6, None), Change(5300, sq.A7, "P"),
              ClockPress(5700, True, None), Change(7000, sq.D7, None), Change(7300, sq.C6, "k"),
              ClockPress(7700, False, None), Change(9000, sq.A8, "Q"), Change(9670, sq.A7, None),
              ClockPress(10200, True, None), Change(11000, sq.C6, None), Change(11300, sq.B6, "k"),
              ClockPress(11700, False, None)]
    run = harness.run(protocol, start, events, seed=3)
    assert run.translator is not None
    evs = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(evs) == ["c7b8b", "e8d7", "a6a7", "d7c6", "a7a8q", "c6b6"]
    assert not [e for e in evs if e.type in ("alert", "move_amended")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("rest", [300, 1500])
def test_castling_rook_first_resting_before_the_king_is_lifted_is_castling(protocol: str, rest: int) -> None:
    """The rook put down on f1 and resting before the king is lifted (4.4.2): O-O with castling_rook_first,
    as on touchmove's own boards (the rook move published first is amended)."""
    start = chess.Board("r3k2r/ppp2ppp/8/8/8/8/PPP2PPP/R3K2R w KQkq - 0 1")
    events = [Change(1000, chess.H1, None), Change(1300, chess.F1, "R"), Change(1300 + rest, chess.E1, None),
              Change(1600 + rest, chess.G1, "K"), ClockPress(2000 + rest, True, None),
              Change(4000, chess.H7, None), Change(4300, chess.H6, "p"), ClockPress(4700, False, None)]
    run = harness.run(protocol, start, events, seed=rest)
    assert run.translator is not None
    evs = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(evs) == ["e1g1", "h7h6"]
    assert [e.code for e in evs if e.type == "alert"] == ["castling_rook_first"]  # type: ignore[attr-defined]


def test_castling_king_first_read_rook_first_by_one_dgt_scan_is_no_breach() -> None:
    """Shared game 237, default hands: ...O-O-O (Chess960, king d8, rook c8), the king lifted 115 ms before the
    rook. A DGT board samples its fields in turn, c8 just before d8: one scan that passed them after both lifts
    told the rook's lift 3 ms before the king's (the records below are the translator's), which the engine read
    as the rook touched first (``castling_rook_first``). Two lifts one scan read do not tell which the hand took
    first; the king put down first does (a hand castling rook first puts the rook down first): no breach."""
    start = chess.Board("1brkrq2/ppp1p1pp/1n4n1/4Pp2/2b2P2/6N1/PPP2QPP/NBRKR1B1 b ECec - 0 7", chess960=True)
    records: list[Record] = [Lift(34687, chess.C8), Lift(34690, chess.D8), Place(34717, chess.C8, "k"),
                             Place(34893, chess.D8, "r"), Clock(36000, chess.BLACK, None)]
    engine = Engine(fen=start.shredder_fen(), chess960=True, settle_ms=dgt.MIN_SETTLE_MS)
    evs = [e for r in records for e in engine.feed(r)] + engine.finish()
    assert published(evs) == ["d8c8"]
    assert [e.code for e in evs if e.type == "alert"] == []  # type: ignore[attr-defined]
    # lifted a moment apart, the rook first: 4.4.2
    late = [Lift(34687, chess.C8), Lift(34800, chess.D8), Place(34830, chess.C8, "k"), Place(34990, chess.D8, "r")]
    engine = Engine(fen=start.shredder_fen(), chess960=True, settle_ms=dgt.MIN_SETTLE_MS)
    evs = [e for r in late for e in engine.feed(r)] + engine.finish()
    assert [e.code for e in evs if e.type == "alert"] == ["castling_rook_first"]  # type: ignore[attr-defined]
    # White's O-O in shared game 118 (default hands): the rook lifted, put on f1, then the king lifted; h1 empty
    # told 29 ms before e1 empty, the rook put down first: 4.4.2 (a rule on the lifts alone lost it)
    start = chess.Board("rnbqk1nr/ppppp1bp/5pp1/8/8/5NP1/PPPPPPBP/RNBQK2R w KQkq - 2 4")
    rook_first: list[Record] = [Lift(19900, chess.H1), Lift(19929, chess.E1), Place(19932, chess.F1, "R"),
                                Place(20144, chess.G1, "K"), Clock(21000, chess.WHITE, None)]
    engine = Engine(fen=start.fen(), settle_ms=dgt.MIN_SETTLE_MS)
    evs = [e for r in rook_first for e in engine.feed(r)] + engine.finish()
    assert published(evs) == ["e1g1"]
    assert [e.code for e in evs if e.type == "alert"] == ["castling_rook_first"]  # type: ignore[attr-defined]


def test_a_rook_slid_down_a_file_on_a_chesslink_board_is_no_release_on_the_way() -> None:
    """ChessLink reports a position once it has stood three 41 ms scans (its debounce): a rook slid e8-e3 that
    rests 130 ms on e6 and 40 ms on e5 and e4 is reported on e6, then on e3 only, so the reports show it on e6 for
    about 250 ms (as in shared game 23, default hands: Re6 published, amended to Re3 with
    ``moved_after_release``). The bridge's settle time for a ChessLink board is 300 ms at least: Re3, no alert
    (before, with 200: Re6 amended, ``moved_after_release``)."""
    start = chess.Board("4r1k1/5ppp/8/8/8/8/5PPP/4R1K1 b - - 0 1")
    t = 1500
    events: list[Change | ClockPress] = [Change(t, chess.E8, None)]
    for sq, dwell in ((chess.E7, 40), (chess.E6, 130), (chess.E5, 40), (chess.E4, 40)):
        events += [Change(t + 10, sq, "r"), Change(t + 10 + dwell, sq, None)]
        t += 10 + dwell
    events.append(Change(t + 10, chess.E3, "r"))
    run = harness.run("chesslink", start, events)
    assert run.translator is not None
    assert run.translator.min_settle_ms >= 300
    got = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(got) == ["e8e3"]
    assert [e.code for e in got if e.type == "alert"] == []  # type: ignore[attr-defined]


def rook_slid_up_the_c_file(rest_on_c3: int) -> list[Change | ClockPress]:
    """Return a rook lifted from c1 and slid to c7 as in shared game 59 (default hands), resting ``rest_on_c3``
    ms on c3, then 18-91 ms on c4, c5 and c6."""
    t = 1500
    events: list[Change | ClockPress] = [Change(t, chess.C1, None), Change(t + 79, chess.C3, "R")]
    t += 79 + rest_on_c3
    events.append(Change(t, chess.C3, None))
    for sq, dwell in ((chess.C4, 18), (chess.C5, 91), (chess.C6, 47)):
        events += [Change(t + 20, sq, "R"), Change(t + 20 + dwell, sq, None)]
        t += 20 + dwell
    events.append(Change(t + 20, chess.C7, "R"))
    return events


@pytest.mark.parametrize("rest", [150, 200])
def test_a_rook_whose_slide_the_chesslink_reports_show_in_one_step_was_not_released_on_the_way(rest: int) -> None:
    """Shared game 59, default hands: a rook slid c1-c7 that rests a moment on c3 (less than the settle time) is
    reported on c3, then 330-410 ms later on c7, c3 emptied in the same report: the reports never showed it in the
    hand, so how long it stood on c3 they cannot tell (most of that time was its slide). Rc3 was published, amended
    to Rc7 with ``moved_after_release``; now Rc7 (after Rc3 amended) with no alert."""
    start = chess.Board("5rk1/1p1Q2p1/1q2p2p/pP1p4/P2Pp3/5NP1/6PP/2R3K1 w - - 0 25")
    run = harness.run("chesslink", start, rook_slid_up_the_c_file(rest))
    assert run.translator is not None
    got = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(got) == ["c1c7"]
    assert [e.code for e in got if e.type == "alert"] == []  # type: ignore[attr-defined]


def test_a_rook_shown_on_c3_for_seconds_then_on_c7_was_moved_after_release() -> None:
    """The same rook left on c3 two seconds, then taken on to c7 quicker than the board's debounce: the reports
    show it on c3, then on c7 with c3 empty, and it stood on c3 far longer than a slide takes (4.7)."""
    start = chess.Board("5rk1/1p1Q2p1/1q2p2p/pP1p4/P2Pp3/5NP1/6PP/2R3K1 w - - 0 25")
    events: list[Change | ClockPress] = [Change(1500, chess.C1, None), Change(1580, chess.C3, "R"),
                                         Change(3600, chess.C3, None), Change(3680, chess.C7, "R")]
    run = harness.run("chesslink", start, events)
    assert run.translator is not None
    got = engine_events(start, run.records, max(200, run.translator.min_settle_ms))
    assert published(got) == ["c1c7"]
    assert [e.code for e in got if e.type == "alert"] == ["moved_after_release"]  # type: ignore[attr-defined]


def positions_in(reports: list[str]) -> list[str]:
    return [chess.BaseBoard(fen).board_fen() for fen in reports]


def test_the_reports_are_what_the_board_itself_showed() -> None:
    """``Run.reports`` keeps the pieces the board's own reports showed, not the order the adapter tells their
    changes in: 1.e4 answered by ...e5 within ChessLink's debounce (3 scans of 41 ms) comes in one status, which
    shows neither the position after 1.e4 nor any other between; the records tell the changes one by one (so the
    position after 1.e4 is among them). A rotated DGT board's reports are turned the right way."""
    board = chess.Board()
    after_e4 = board.copy()
    after_e4.push_uci("e2e4")
    after_e5 = after_e4.copy()
    after_e5.push_uci("e7e5")
    events: list[Change | ClockPress] = [Change(1000, chess.E2, None), Change(1060, chess.E4, "P"),
                                         Change(1110, chess.E7, None), Change(1170, chess.E5, "p")]
    run = harness.run("chesslink", board, list(events))
    assert positions_in(run.reports) == [board.board_fen(), after_e5.board_fen()]
    told = chess.BaseBoard(board.board_fen())
    seen = []
    for record in run.records:
        if isinstance(record, Lift):
            told.remove_piece_at(record.sq)
        elif isinstance(record, Place) and record.piece is not None:
            told.set_piece_at(record.sq, chess.Piece.from_symbol(record.piece))
        seen.append(told.board_fen())
    assert after_e4.board_fen() in seen
    rotated = harness.run("dgt", board, list(events), rotated=True)
    assert positions_in(rotated.reports)[0] == board.board_fen()
    assert after_e4.board_fen() in positions_in(rotated.reports)
