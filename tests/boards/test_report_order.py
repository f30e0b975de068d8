"""The order in which a board that names its pieces tells the changes of one report (a ChessLink or Chessnut frame
that differs from the last in several squares; a DGT scan): as a hand could have made them, so that a reply
faster than the scan is read as the two plies it is, with no touch alert (docs/boards.md, *Replies faster than
the scan*)."""

from __future__ import annotations

from typing import Any

import chess

from touchmove.boards.adapter import ANSWER_GAP_MS, PieceAdapter, report_order
from touchmove.boards.base import encode_lines
from touchmove.records import Record
from touchmove.rules import Engine, Event
from touchmove.serial.lines import FROM_BOARD_ADAPTER, decode
from touchmove.sim.pieces import start_pieces

SETTLE_MS = 200


def records_of(lines: list[dict[str, Any]]) -> list[Record]:
    out = []
    for raw in encode_lines(lines):
        assert raw is not None
        msg = decode(raw, FROM_BOARD_ADAPTER)
        if msg.record is not None:
            out.append(msg.record)
    return out


def board_after(board: chess.Board, *, emptied: tuple[str, ...] = (), put: dict[str, str] | None = None
                ) -> list[str | None]:
    pieces = start_pieces(board)
    for name in emptied:
        pieces[chess.parse_square(name)] = None
    for name, letter in (put or {}).items():
        pieces[chess.parse_square(name)] = letter
    return pieces


def read(frames: list[tuple[int, list[str | None]]], start: chess.Board) -> tuple[list[dict[str, Any]], list[Event]]:
    """Feed whole-board reports to an adapter, its records to the engine; return the lines and the events."""
    adapter = PieceAdapter()
    lines = adapter.full_report(start_pieces(start), 0)
    for t, board in frames:
        lines += adapter.full_report(board, t)
    eng = Engine(fen=start.fen(), settle_ms=SETTLE_MS)
    events = [e for r in records_of(lines) for e in eng.feed(r)]
    return lines, events + eng.advance(frames[-1][0] + 5000) + eng.finish()


def told(lines: list[dict[str, Any]]) -> list[str]:
    return [f"{line['type']} {line.get('sq')}" for line in lines if line["type"] in ("lift", "place")]


def sans(events: list[Event]) -> list[str]:
    return [e.san for e in events if e.type == "move"]  # type: ignore[attr-defined]


def alerts(events: list[Event]) -> list[str]:
    return [e.code for e in events if e.type == "alert"]  # type: ignore[attr-defined]


def test_a_reply_lifted_in_the_frame_that_ends_the_move_is_told_after_it() -> None:
    """One frame with 1.Nf3 made whole and Black's e7 already lifted (a reply faster than the scan), then e5.
    Before, the frame's empties were told first (g1 and e7 lifted, then f3 put down): Black's lift read before
    White's move was made, a touch out of turn. Now White's lift and landing, then Black's lift, later."""
    frame = board_after(chess.Board(), emptied=("g1", "e7"), put={"f3": "N"})
    e5 = list(frame)
    e5[chess.E5] = "p"
    lines, events = read([(1000, frame), (1100, e5)], chess.Board())
    assert told(lines) == ["lift g1", "place f3", "lift e7", "place e5"]
    times = {f"{line['type']} {line['sq']}": line["t"] for line in lines if line["type"] in ("lift", "place")}
    assert times["lift e7"] - times["place f3"] >= ANSWER_GAP_MS
    assert sans(events) == ["Nf3", "e5"]
    assert alerts(events) == []


def test_a_move_made_whole_goes_before_the_other_sides_lift_whatever_the_squares() -> None:
    """The order does not follow the squares' numbers: Black's a7 lifted (a lower square than White's b1) is told
    after White's Nc3, made whole in the same frame."""
    shown = start_pieces(chess.Board())
    target = board_after(chess.Board(), emptied=("b1", "a7"), put={"c3": "N"})
    changed = [sq for sq in range(64) if shown[sq] != target[sq]]
    parts = report_order(shown, target, changed, [], True)
    assert [[chess.square_name(sq) for sq in part] for part in parts] == [["b1", "c3"], ["a7"]]


def test_three_plies_in_one_frame_are_told_in_turn() -> None:
    """1.e4 d5, then Black's d-pawn lifted, then one frame: ...d4 lands, Nc3 made whole, and Black's g8 lifted
    (the ChessLink frame of a shared game read as ...Nf6-e4 Nxe4 d4 before): d4, then Nc3, then g8, each answer
    later than the move it answers."""
    board = chess.Board("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
    shown = start_pieces(board)
    shown[chess.D5] = None
    target = board_after(board, emptied=("d5", "b1", "g8"), put={"d4": "p", "c3": "N"})
    changed = [sq for sq in range(64) if shown[sq] != target[sq]]
    parts = report_order(shown, target, changed, ["p"], True)
    assert [[chess.square_name(sq) for sq in part] for part in parts] == [["d4"], ["b1", "c3"], ["g8"]]


def test_castling_in_one_frame_is_told_king_first() -> None:
    """O-O-O in one frame: the king's squares before the rook's (the squares' order put a1 first, a rook lifted
    before the king)."""
    start = chess.Board("r3k2r/pppqpppp/2n5/8/8/2N5/PPPQPPPP/R3K2R w KQkq - 0 1")
    frame = board_after(start, emptied=("a1", "e1"), put={"c1": "K", "d1": "R"})
    lines, events = read([(1000, frame)], start)
    assert told(lines) == ["lift e1", "lift a1", "place c1", "place d1"]
    assert sans(events) == ["O-O-O"] and alerts(events) == []


def test_a_rook_and_its_king_lifted_in_one_frame_breach_nothing() -> None:
    """...O-O on a ChessLink board (the bench's default hands, shared game 33): one status shows the rook gone from
    h8 and on f8 and the king gone from e8, the next the king on g8. Which the hand took first no report tells (the
    adapter tells the whole rook move first, its own order). Before, that order was read as the rook touched first:
    touch_move (4.3.1, "move h8") in a game given back exactly. Now castling, no alert."""
    start = chess.Board("r3k2r/pppqpppp/2n5/8/8/2N5/PPPQPPPP/R3K2R b KQkq - 0 1")
    rook_moved = board_after(start, emptied=("h8", "e8"), put={"f8": "r"})
    castled = board_after(start, emptied=("h8", "e8"), put={"f8": "r", "g8": "k"})
    lines, events = read([(1000, rook_moved), (1160, castled)], start)
    assert told(lines)[:2] == ["lift h8", "place f8"]
    assert sans(events) == ["O-O"] and alerts(events) == []


def test_a_piece_lifted_before_the_answer_lands_stays_in_the_hand() -> None:
    """Nf3 ... Black's knight g8 lifted, White's b1 lifted before Black's knight lands on f6 (a fast reply read
    square by square), then the knight put on c3. Before, Black's landing emptied White's knight from the hand,
    and c3 (another white knight still on f3) waited for a lift that never came: told 400 ms late."""
    adapter = PieceAdapter()
    adapter.full_report(start_pieces(chess.Board("rnbqkbnr/pppppppp/8/8/8/5N2/PPPPPPPP/RNBQKB1R b KQkq - 1 1")), 0)
    adapter.square_report(chess.G8, None, 1000)
    adapter.square_report(chess.B1, None, 1050)
    adapter.square_report(chess.F6, "n", 1100)
    out = adapter.square_report(chess.C3, "N", 1200)
    assert [(line["type"], line["sq"]) for line in out] == [("place", "c3")]


def read_squares(reports: list[tuple[int, str, str | None]], start: chess.Board, settle_ms: int = 300,
                 ) -> tuple[list[dict[str, Any]], list[Event]]:
    """Feed square-by-square reports (a DGT board's field updates, with the link's ticks every 100 ms) to an
    adapter, its records to the engine; return the lines and the events."""
    adapter = PieceAdapter()
    lines = adapter.full_report(start_pieces(start), 0)
    tick = 100
    for t, name, content in reports:
        while tick <= t:
            lines += adapter.tick(tick)
            tick += 100
        lines += adapter.square_report(chess.parse_square(name), content, t)
    end = reports[-1][0] + 5000
    while tick <= end:
        lines += adapter.tick(tick)
        tick += 100
    eng = Engine(fen=start.fen(), settle_ms=settle_ms)
    events = [e for r in records_of(lines) for e in eng.feed(r)]
    return lines, events + eng.advance(end) + eng.finish()


def test_a_scan_that_reports_the_reply_lift_before_the_landing_gives_both_plies() -> None:
    """DGT: 1.Nf3 e5 with Black's e7 lifted before the knight lands; the scan reaches e7 (rank 7) before f3, so
    the field updates come g1, e7, f3, e5. Before, Black's lift was read before White's move was made (a touch
    out of turn, the plies recovered with changes_lost at best); now the lift waits for the landing of the same
    scan: Nf3 then e5, no alert."""
    lines, events = read_squares([(1000, "g1", None), (1210, "e7", None), (1300, "f3", "N"),
                                  (1520, "e5", "p")], chess.Board())
    assert told(lines) == ["lift g1", "place f3", "lift e7", "place e5"]
    assert sans(events) == ["Nf3", "e5"]
    assert alerts(events) == []


def test_a_scan_that_reports_the_rook_before_the_king_gives_castling() -> None:
    """DGT: O-O-O with the king lifted first, both lifts within one scan, which samples a1 before e1: the field
    updates come a1, e1. Before, the rook's lift was read first: castling_rook_first. Now the rook's lift beside
    its king waits for the king's: O-O-O, no alert."""
    start = chess.Board("r3k2r/pppqpppp/2n5/8/8/2N5/PPPQPPPP/R3K2R w KQkq - 0 1")
    lines, events = read_squares([(1000, "a1", None), (1016, "e1", None), (1240, "c1", "K"),
                                  (1244, "d1", "R")], start)
    assert told(lines) == ["lift e1", "lift a1", "place c1", "place d1"]
    assert sans(events) == ["O-O-O"]
    assert alerts(events) == []


def test_a_lift_out_of_turn_is_still_told() -> None:
    """Black's piece lifted and put back while White's knight is in the hand (a touch out of turn): held, it is
    told when the scan is over, and the engine still sees the touch."""
    lines, events = read_squares([(1000, "g1", None), (1200, "a7", None), (1400, "a7", "p"),
                                  (2400, "f3", "N")], chess.Board())
    assert told(lines)[:3] == ["lift g1", "lift a7", "place a7"]
    assert sans(events) == ["Nf3"]
    assert alerts(events) == ["touch_out_of_turn"]


def test_a_victim_carried_across_the_board_is_not_the_end_of_a_move() -> None:
    """DGT, default hands (a shared game): ...Rxc3 with the knight taken first and carried off over c6, where a
    scan sees it. The knight put on c6 is not White's move ending: Black's rook, lifted since, is no answer
    begun, and its landing on c3 waits for c6 to clear as before. With the rook kept in the hand the landing came
    before c6 cleared: Rc6 read, a touch_move (the first version of this change)."""
    start = chess.Board("2r2rk1/8/8/8/8/2N5/8/4K3 w - - 0 1")   # another black rook stands (on f8)
    lines, events = read_squares([(500, "e1", None), (700, "d2", "K"), (1000, "c3", None), (1250, "c8", None),
                                  (2200, "c6", "N"), (2500, "c3", "r"), (2560, "c6", None)], start)
    assert told(lines) == ["lift e1", "place d2", "lift c3", "lift c8", "place c6", "lift c6", "place c3"]
    assert sans(events) == ["Kd2", "Rxc3"]
    assert alerts(events) == []


def test_a_victim_pushed_aside_by_the_capturing_hand_is_not_the_end_of_a_move() -> None:
    """DGT, harder hands (game 6 of the bench): ...fxg4 with White's pawn pushed aside onto f4 by the capturing
    hand, answered at once by hxg4. Putting the pushed victim down next to its square does not end Black's move:
    the pawn lifted from f5 is still in the hand, so its landing on g4 is told as the scan saw it. Before, the
    victim's landing emptied Black's pawn from the hand, and g4 (other black pawns standing) waited for a lift
    that never came: told 480 ms late and lifted 4 ms after, fxg4 was never seen made (here Ke2 alone and a
    board_mismatch; in the bench game the plies recovered with changes_lost)."""
    start = chess.Board("4k3/p7/8/5p2/6P1/7P/8/4K3 w - - 0 1")
    lines, events = read_squares([(500, "e1", None), (700, "e2", "K"), (2256, "f5", None), (2281, "f4", "P"),
                                  (2284, "g4", None), (2514, "g4", "p"), (2999, "f4", None), (3003, "g4", None),
                                  (3677, "h3", None), (3871, "g4", "P")], start)
    assert told(lines)[:6] == ["lift e1", "place e2", "lift f5", "lift g4", "place f4", "place g4"]
    assert sans(events) == ["Ke2", "fxg4", "hxg4"]
    assert alerts(events) == []


def test_a_rooks_lift_beside_a_king_that_has_moved_is_told_as_it_comes() -> None:
    """A rook's lift from its back rank beside its king waits for the king's lift (castling with both lifts in one
    scan); a king that has left its square since the start array cannot castle, so after O-O the rook of Re1 is
    told lifted when the scan reports it, not a tick later. Before, the wait (100 ms, told at the link's next
    tick) stretched the rook's stay on a square it slid over to the settle time: DGT harder hands, game 64 of
    the bench, Rh1-e1 slid over f1 with the king on c1, read as Rhf1 then amended (moved_after_release); game 88,
    ...Rxd2 answered by Rxd2 whose landing came 190 ms before its lift (plies recovered, changes_lost)."""
    plies = [("g1", "f3", "N"), ("g8", "f6", "n"), ("g2", "g3", "P"), ("g7", "g6", "p"), ("f1", "g2", "B"),
             ("f8", "g7", "b")]
    reports: list[tuple[int, str, str | None]] = []
    t = 1000
    for origin, landing, piece in plies:
        reports += [(t, origin, None), (t + 200, landing, piece)]
        t += 1000
    reports += [(7000, "e1", None), (7200, "g1", "K"), (7300, "h1", None), (7400, "f1", "R"),
                (8000, "e8", None), (8200, "g8", "k"), (8300, "h8", None), (8400, "f8", "r"),
                (9000, "e1", "R"), (9003, "f1", None)]
    lines, events = read_squares(reports, chess.Board())
    assert [(line["t"], line["type"], line["sq"]) for line in lines[-2:]] == [(9003, "lift", "f1"),
                                                                             (9003, "place", "e1")]
    assert sans(events) == ["Nf3", "Nf6", "g3", "g6", "Bg2", "Bg7", "O-O", "O-O", "Re1"]
    assert alerts(events) == []


def test_a_victim_pushed_aside_keeps_the_capturing_piece_in_the_hand() -> None:
    """Chessnut, harder hands (bench game 47), one frame every 100 ms: Ne5 answered by ...Nxe5 faster than the
    settle time, then dxe5 with the knight pushed onto f5 in the frame that shows d4 lifted, the pawn landing on
    e5 in the next frame and the knight taken off f5 0.4 s later. The knight put on f5 is no end of White's move:
    White's pawn stays in the hand and its landing is told with its frame. Before, the knight's placement emptied
    the pawn from the hand and the landing on e5 (other white pawns standing) waited for a lift of its own square
    that never came, told 0.4 s late after the knight left f5: the plies were recovered from the pieces
    (``changes_lost``, ``board_restored``)."""
    start = chess.Board("r2qkb1r/pp1bpppp/2n2n2/1B6/Q1pP4/5N2/PP1N1PPP/R1B1K2R w KQkq - 2 9")
    frames: list[tuple[int, list[str | None]]] = []
    board = start_pieces(start)
    for t, changes in ((38302, {"f3": None}), (38402, {"e5": "N", "c6": None}), (38502, {"e5": None}),
                       (38602, {"e5": "n"}), (38702, {"d4": None, "e5": None, "f5": "n"}), (38802, {"e5": "P"}),
                       (39202, {"f5": None})):
        board = list(board)
        for name, content in changes.items():
            board[chess.parse_square(name)] = content
        frames.append((t, board))
    lines, events = read(frames, start)
    assert told(lines)[-3:] == ["place f5", "place e5", "lift f5"]
    assert [line["t"] for line in lines if line["type"] == "place" and line["sq"] == "e5"][-1] == 38802
    assert sans(events) == ["Ne5", "Nxe5", "dxe5"]
    assert alerts(events) == []
