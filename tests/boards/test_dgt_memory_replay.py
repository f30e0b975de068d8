"""A DGT board's move memory read after the link was lost: the changes made meanwhile replayed to the engine in an
order a hand could have made them, with a rest only where the memory vouches for their order."""

from __future__ import annotations

from typing import Any

import chess

from tests.boards.test_boards_through_engine import engine_events, published
from touchmove import records
from touchmove.boards import dgt
from touchmove.boards.base import encode_lines
from touchmove.rules.events import Event
from touchmove.serial.lines import FROM_BOARD_ADAPTER, DecodeError, decode
from touchmove.sim.dgt import field_of
from touchmove.sim.pieces import start_pieces

SERIAL = b"42042"


def codes_of(board: chess.Board) -> list[int]:
    """Return the board's piece codes in DGT field order."""
    out = [0] * 64
    for sq, content in enumerate(start_pieces(board)):
        out[field_of(sq, False)] = dgt.CONTENT_CODES[content]
    return out


def entry(square: chess.Square, content: str | None) -> bytes:
    """Return the move memory's entry of one field's change."""
    return bytes((0x40 | dgt.CONTENT_CODES[content], field_of(square, False)))


def as_records(lines: list[dict[str, Any]]) -> list[records.Record]:
    """Return the records the bridge reads from the translator's lines."""
    out = []
    for raw in encode_lines(lines):
        try:
            msg = decode(raw, FROM_BOARD_ADAPTER)
        except DecodeError:
            continue
        if msg.record is not None:
            out.append(msg.record)
    return out


def replayed(start: chess.Board, log: bytes, after: chess.Board, lost_from: int) -> list[Event]:
    """Return the engine's events for a DGT board bound showing ``start``, its link lost from ``lost_from`` (ms),
    then answering again at 20 s with its move memory ``log`` and showing ``after``."""
    dgt.MEMORIES.pop(SERIAL.decode(), None)
    tr = dgt.DgtTranslator("sim")
    lines: list[dict[str, Any]] = []
    tr.start(0)
    lines += tr.feed(dgt.message(dgt.MSG_SERIALNR, SERIAL), 10)
    lines += tr.feed(dgt.message(dgt.MSG_EE_MOVES, bytes((dgt.EE_DOWNLOADED,))), 20)
    lines += tr.feed(dgt.message(dgt.MSG_BOARD_DUMP, bytes(codes_of(start))), 30)
    for now in range(lost_from, 6000, 500):      # the board stops answering: the link is lost
        lines += tr.tick(now)[0]
    assert tr.links_lost == 1
    lines += tr.feed(dgt.message(dgt.MSG_EE_MOVES, log), 20_000)
    lines += tr.feed(dgt.message(dgt.MSG_BOARD_DUMP, bytes(codes_of(after))), 20_100)
    lines += tr.tick(25_000)[0]
    dgt.MEMORIES.pop(SERIAL.decode(), None)
    return engine_events(start, as_records(lines), dgt.MIN_SETTLE_MS)


def test_a_recapture_the_memory_logged_before_its_lift_gives_both_plies() -> None:
    """Drop 20 s, power cycle, game 31 of the bench, from ...b5 on: ...bxc3 e.p. then bxc3 made while the link
    was lost. The memory holds c3 once (a black pawn landing, taken off, White's pawn: P), and the scan that read
    White's pawn on c3 read b2 empty after it (b2 comes later in the scan): the memory says c3 P before b2 empty.
    Replayed with a rest between the two, the engine saw a white pawn come to c3 with b2 still occupied, took back
    to ...b5 and recovered a wrong line (axb5 Bxb2 f4 Bg7 c3); replayed as one scan's changes, b2 lifted first,
    every ply comes back."""
    start = chess.Board("1r1q1rk1/1pnnppbp/p2p2p1/2pP4/P3P3/4B2P/1PPQ1PP1/R2NRBK1 b - - 7 17")
    log = (bytes((dgt.EE_DOWNLOADED,)) + entry(chess.B7, None) + entry(chess.B5, "p")
           + entry(chess.B5, None) + entry(chess.A4, None) + entry(chess.B5, None) + entry(chess.A6, None)
           + entry(chess.B5, "p") + entry(chess.F2, None) + entry(chess.F4, "P") + entry(chess.B5, None)
           + entry(chess.B4, "p") + entry(chess.C4, "P") + entry(chess.C2, None)
           + entry(chess.B4, None) + entry(chess.C4, None) + entry(chess.C3, "P") + entry(chess.B2, None)
           + entry(chess.E7, None) + entry(chess.E6, "p"))
    after = chess.Board("1r1q1rk1/2nn1pbp/3pp1p1/2pP4/4PP2/2P1B2P/3Q2P1/R2NRBK1 w - - 0 22")
    assert published(replayed(start, log, after, lost_from=1500)) == [
        'b7b5', 'a4b5', 'a6b5', 'f2f4', 'b5b4', 'c2c4', 'b4c3', 'b2c3', 'e7e6']


def test_captures_on_one_square_the_memory_merged_come_back_in_their_order() -> None:
    """Drop 20 s, game 56 of the bench: ...Nxd5 Nxd5 Bxd5 Bxd5 Rxd5 Qe4 Rxd1 Rxd1 made while the link was lost.
    The memory merges the consecutive changes of d5 (the knights, the bishops landing there are lost) and of d1
    (R, r, R: one entry, the same as before). The engine follows the orders of the captures on d5 as hypotheses;
    the queen put on e4 dropped every one of them, and the board it went on blind with had no queen on e4 (the
    change that dropped them was taken by none): it searched for lines that had taken the queen, and never
    published a ply again. The change that drops every line is read by the engine itself: the plies come back."""
    start = chess.Board("r1qr2k1/pp2bppp/2p1bn2/3P4/3Q4/2N1B1PP/PPP2PBK/3R1R2 b - - 0 14")
    log = bytes((dgt.EE_DOWNLOADED,)) + b"".join(entry(sq, content) for sq, content in (
        (chess.F6, None), (chess.D5, "N"), (chess.C3, None), (chess.E6, None), (chess.D5, None), (chess.G2, None),
        (chess.D5, None), (chess.D8, None), (chess.D5, "r"), (chess.D4, None), (chess.E4, "Q"), (chess.D5, None),
        (chess.D1, "R"), (chess.F1, None), (chess.E7, None), (chess.F6, "b")))
    after = chess.Board("r1q3k1/pp3ppp/2p2b2/8/4Q3/4B1PP/PPP2P1K/3R4 w - - 1 19")
    assert published(replayed(start, log, after, lost_from=1000)) == [
        "f6d5", "c3d5", "e6d5", "g2d5", "d8d5", "d4e4", "d5d1", "f1d1", "e7f6"]


def power_up(board: chess.Board) -> bytes:
    """Return the move memory's power-up: its tag, then an entry for each piece the board finds."""
    pieces = sorted(board.piece_map().items(), key=lambda item: field_of(item[0], False))
    return bytes((dgt.EE_POWERUP,)) + b"".join(entry(sq, piece.symbol()) for sq, piece in pieces)


def test_a_piece_put_down_as_the_board_is_switched_on_is_searched_from_the_board_found() -> None:
    """Drop 20 s, power cycle, game 44 of the bench: White castles long as the board is switched back on (the
    king is on c1, the rook still in the hand when it finds its pieces), then ...Qa3, the queen put down before
    she is lifted from d6, and Bb5. Nothing marks where the power-up's pieces end: the rook and the queen are
    read as found (two black queens), a board five squares off the host's, told as a snapshot, which the replay
    left out: the engine read Bb5 where O-O-O was made, with no alert. Now it searches from the board found."""
    start = chess.Board("1r2kb1r/p1p2ppp/2pqp3/3n4/3P4/2N2Q2/PPPB1PPP/R3KB1R w KQk - 4 13")
    found = start.copy()
    found.remove_piece_at(chess.E1)
    found.remove_piece_at(chess.A1)
    found.set_piece_at(chess.C1, chess.Piece.from_symbol("K"))
    log = (bytes((dgt.EE_DOWNLOADED, dgt.EE_NOP, dgt.EE_NOP, dgt.EE_NOP)) + power_up(found)
           + entry(chess.D1, "R") + entry(chess.A3, "q") + entry(chess.D6, None)
           + entry(chess.F1, None) + entry(chess.B5, "B"))
    after = start.copy()
    for san in ("O-O-O", "Qa3", "Bb5"):
        after.push_san(san)
    assert published(replayed(start, log, after, lost_from=1000)) == ["e1c1", "d6a3", "f1b5"]


def test_plies_made_while_the_board_was_off_are_searched_for_not_left_out() -> None:
    """O-O-O and ...Qa3 made while the board was switched off, then Bb5: the board it found at power-up differs
    from the host's in six squares, which the adapter tells as a snapshot, and the replay left snapshots out: the
    engine never saw the board found, and published Bb5 alone with no alert (the dump after it matched what the
    adapter had). The snapshot is the engine's evidence: both plies come back, with changes_lost."""
    start = chess.Board("1r2kb1r/p1p2ppp/2pqp3/3n4/3P4/2N2Q2/PPPB1PPP/R3KB1R w KQk - 4 13")
    found = start.copy()
    for san in ("O-O-O", "Qa3"):
        found.push_san(san)
    log = (bytes((dgt.EE_DOWNLOADED, dgt.EE_NOP, dgt.EE_NOP, dgt.EE_NOP)) + power_up(found)
           + entry(chess.F1, None) + entry(chess.B5, "B"))
    after = found.copy()
    after.push_san("Bb5")
    events = replayed(start, log, after, lost_from=1000)
    assert published(events) == ["e1c1", "d6a3", "f1b5"]
    assert [e.code for e in events if e.type == "alert"] == ["changes_lost"]  # type: ignore[attr-defined]


def test_only_a_landing_and_the_lift_that_explains_it_later_in_the_scan_are_one_run() -> None:
    """A white pawn put on c3 (no pawn lifted just before can go there) and a white pawn lifted from b2 after it
    (a later field, a pawn that can): maybe one scan's reading of bxc3, the lift made first, one run. A piece of
    the other side lifted after a landing is the next move begun; a landing of the piece lifted just before
    (...Rc8-a8) and a rook lifted later (e8, taken by Bxe8) is a whole move and a victim; a lift logged before a
    landing is in the hand's order: each a run of its own, a rest after it."""
    b4, c3, b2, g5, e7 = (field_of(sq, False) for sq in (chess.B4, chess.C3, chess.B2, chess.G5, chess.E7))
    c8, a8, e8 = (field_of(sq, False) for sq in (chess.C8, chess.A8, chess.E8))
    pawn, black_queen, black_rook = dgt.CONTENT_CODES["P"], dgt.CONTENT_CODES["q"], dgt.CONTENT_CODES["r"]
    board = [0] * 64
    board[b4], board[b2], board[g5] = dgt.CONTENT_CODES["p"], pawn, black_queen
    board[c8], board[e8] = black_rook, black_rook
    changes: list[dgt.Change] = [(b4, 0), (c3, pawn), (b2, 0), (e7, 0)]
    assert dgt.scan_runs(board, changes) == [[(b4, 0)], [(c3, pawn), (b2, 0)], [(e7, 0)]]
    assert dgt.scan_runs(board, [(c3, pawn), (g5, 0)]) == [[(c3, pawn)], [(g5, 0)]]
    rook_move = [(c8, 0), (a8, black_rook), (e8, 0)]
    assert dgt.scan_runs(board, rook_move) == [[(c8, 0)], [(a8, black_rook)], [(e8, 0)]]
    found = [0] * 64
    assert dgt.scan_runs(board, [(b2, 0), found, (e7, 0)]) == [[(b2, 0)], [found], [(e7, 0)]]
    assert [t for t, _ in dgt.replay_times(board, changes, 1000, 5000)] == [2000, 3000, 4000]
    # a board set up rotated numbers its fields the other way round: White's pawns go the other way
    assert dgt.reaches(pawn, b2, c3) and not dgt.reaches(pawn, c3, b2)
    assert dgt.reaches(pawn, c3, b2, rotated=True) and not dgt.reaches(pawn, b2, c3, rotated=True)


def test_a_piece_that_moved_on_from_where_it_landed_while_the_link_was_lost_was_not_released_there() -> None:
    """Drop 3 s, game 185 of the bench: ...Rh4 made while the link was lost, the rook slid from h8 over h6 (the
    scan read it there) on to h4. The memory logs h8 empty, h6 r, h6 empty, h4 r with no times; spread over the
    drop, the rook seemed to rest on h6 for a second, and the engine amended ...Rh6 to ...Rh4 with a
    ``moved_after_release`` the hand never earned. Nothing says the rook was released on h6: it is replayed
    passing through, and only ...Rh4 is published."""
    start = chess.Board("r3kb1r/pp3pp1/2b1p3/4P1p1/2BB4/8/P1P2PPP/1R3RK1 b kq - 1 17")
    log = (bytes((dgt.EE_DOWNLOADED,)) + entry(chess.H8, None) + entry(chess.H6, "r") + entry(chess.H6, None)
           + entry(chess.H4, "r"))
    after = start.copy()
    after.push_san("Rh4")
    events = replayed(start, log, after, lost_from=1000)
    assert published(events) == ["h8h4"]
    assert [e.code for e in events if e.type == "alert"] == []  # type: ignore[attr-defined]


def test_a_piece_that_moved_on_is_told_at_once_and_the_plies_about_it_keep_their_rests() -> None:
    """The times of a replay: a lift of the square the run before filled, then the same piece put down where it
    can go from there, are told at the time of that landing (the memory vouches for no rest); the other runs
    are spread over the drop as before."""
    h8, h6, h4, a7, a6 = (field_of(sq, False) for sq in (chess.H8, chess.H6, chess.H4, chess.A7, chess.A6))
    rook, pawn = dgt.CONTENT_CODES["r"], dgt.CONTENT_CODES["P"]
    board = [0] * 64
    board[h8], board[a7] = rook, dgt.CONTENT_CODES["p"]
    changes: list[dgt.Change] = [(h8, 0), (h6, rook), (h6, 0), (h4, rook), (a7, 0), (a6, dgt.CONTENT_CODES["p"])]
    times = [t for t, _ in dgt.replay_times(board, changes, 1000, 5000)]
    assert times == [1800, 2600, 2600, 2600, 3400, 4200]
    # the lift logged after the landing, one run (drop 3 s, game 88: f2-f3-f4, the scan read f4 before f3)
    f2, f3, f4 = (field_of(sq, False) for sq in (chess.F2, chess.F3, chess.F4))
    board[f2] = pawn
    one_run = [(f2, 0), (f3, pawn), (f4, pawn), (f3, 0), (a7, 0)]
    assert dgt.scan_runs(board, one_run) == [[(f2, 0)], [(f3, pawn)], [(f4, pawn), (f3, 0)], [(a7, 0)]]
    assert [t for t, _ in dgt.replay_times(board, one_run, 1000, 5000)] == [2000, 3000, 3000, 4000]
    # the landing told live before the link was lost (game 185): the piece moving on is told at once
    assert [t for t, _ in dgt.replay_times(board, [(h6, 0), (h4, rook), (a7, 0)], 1000, 5000,
                                           landed=(h6, rook))] == [1000, 1000, 3000]
    # a queen taking on f4 slid over e3 (drop 3 s, game 119): logged f4 empty, e3 Q with d2 empty, f4 Q, then
    # e3 empty (the scan reads f4 first); spread, the queen seemed to rest on e3 a second with f4 empty
    d2, e3, f4_ = (field_of(sq, False) for sq in (chess.D2, chess.E3, chess.F4))
    queen = dgt.CONTENT_CODES["Q"]
    taking = [0] * 64
    taking[d2], taking[f4_] = queen, dgt.CONTENT_CODES["p"]
    log = [(f4_, 0), (e3, queen), (d2, 0), (f4_, queen), (e3, 0)]
    assert dgt.scan_runs(taking, log) == [[(f4_, 0)], [(e3, queen), (d2, 0)], [(f4_, queen)], [(e3, 0)]]
    assert [t for t, _ in dgt.replay_times(taking, log, 1000, 4000)] == [2000, 3000, 3000, 3000]
    # ...Rxd1 (drop 20 s, game 219), the rook slid d8-d3-d5-d1: one scan read d3 r with d8 still full (it had
    # passed d8 just before the lift), the next d8 empty: the lift logged late from an earlier field is the same
    # move; then the rook moving on, each new square read before the one it left
    d1, d3, d5, d8 = (field_of(sq, False) for sq in (chess.D1, chess.D3, chess.D5, chess.D8))
    black_rook = dgt.CONTENT_CODES["r"]
    rooks = [0] * 64
    rooks[d1], rooks[d8] = dgt.CONTENT_CODES["R"], black_rook
    slid = [(d1, 0), (d3, black_rook), (d8, 0), (d5, black_rook), (d3, 0), (d1, black_rook), (d5, 0)]
    assert dgt.scan_runs(rooks, slid) == [[(d1, 0)], [(d3, black_rook), (d8, 0)], [(d5, black_rook)], [(d3, 0)],
                                          [(d1, black_rook)], [(d5, 0)]]
    assert [t for t, _ in dgt.replay_times(rooks, slid, 1000, 4000)] == [2000, 3000, 3000, 3000, 3000, 3000]
    # Nf3 slid onto its square just before the link was lost (drop 20 s, game 117): told live on f3 with g1
    # still full, the memory logs g1 empty first; a rest before it showed a knight too many (board_mismatch)
    g1, f3 = field_of(chess.G1, False), field_of(chess.F3, False)
    knight = dgt.CONTENT_CODES["N"]
    knights = list(board)
    knights[g1], knights[f3] = knight, knight
    assert [t for t, _ in dgt.replay_times(knights, [(g1, 0), (a7, 0)], 1000, 5000, landed=(f3, knight))] == [
        1000, 3000]
    found_then = list(knights)
    found_then[g1] = 0
    assert [t for t, _ in dgt.replay_times(knights, [found_then, (a7, 0)], 1000, 5000, landed=(f3, knight))] == [
        1000, 3000]
    # f2-f4 slid over f3 as the board was switched on (drop 20 s with a power cycle, game 88): its power-up read
    # the pawn on f3 and f4 at once, then the memory logs f3 empty: replayed with no rest between
    sliding = list(board)
    sliding[f2] = 0
    found_both = list(sliding)
    found_both[f3], found_both[f4] = pawn, pawn
    assert [t for t, _ in dgt.replay_times(sliding, [found_both, (f3, 0), (a7, 0)], 1000, 4000,
                                           landed=(f2, 0))] == [2000, 2000, 3000]
    # the board switched off meanwhile: its power-up finds the rook on h4 (the same game, the drop's power cycle)
    found = list(board)
    found[h8], found[h4] = 0, rook
    before = list(board)
    before[h8], before[h6] = 0, rook
    assert [t for t, _ in dgt.replay_times(before, [found, (a7, 0)], 1000, 5000, landed=(h6, rook))] == [1000, 3000]
    # a piece of the other side put down on the square emptied is no moving on
    assert len(set(t for t, _ in dgt.replay_times(board, [(h6, rook), (h6, 0), (h4, pawn)], 1000, 5000))) == 3


def test_a_castling_logged_rook_first_by_one_scan_is_one_run() -> None:
    """Drop 3 s, game 81: O-O-O made while the link was lost, the king lifted first. One scan read a1 empty, c1 K
    and e1 empty (a1 first, its fields in turn), the next d1 R: the memory logs the rook lifted first. Replayed a
    run each, a second apart, the rook seemed lifted long before the king (``castling_rook_first``, 4.4.2): the
    four changes of a castling logged one after another are one run, lifts first, and O-O-O is published with no
    alert."""
    a1, c1, d1, e1 = (field_of(sq, False) for sq in (chess.A1, chess.C1, chess.D1, chess.E1))
    king, rook = dgt.CONTENT_CODES["K"], dgt.CONTENT_CODES["R"]
    board = [0] * 64
    board[a1], board[e1] = rook, king
    log: list[dgt.Change] = [(a1, 0), (c1, king), (e1, 0), (d1, rook)]
    assert dgt.scan_runs(board, log) == [log]
    # a king moved two files with no rook is no castling
    assert len(dgt.scan_runs(board, [(e1, 0), (c1, king)])) == 2
    start = chess.Board("r3k3/pp3pb1/4p1n1/5bB1/8/1BNP1Pp1/PPP3Pr/R3K1N1 w Qq - 2 18")
    log_bytes = bytes((dgt.EE_DOWNLOADED,)) + b"".join(entry(sq, content) for sq, content in (
        (chess.A1, None), (chess.C1, "K"), (chess.E1, None), (chess.D1, "R")))
    after = start.copy()
    after.push_san("O-O-O")
    events = replayed(start, log_bytes, after, lost_from=1000)
    assert published(events) == ["e1c1"]
    assert [e.code for e in events if e.type == "alert"] == []  # type: ignore[attr-defined]
