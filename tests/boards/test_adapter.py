"""The piece adapter: what a piece-reporting board shows, as records (promotions read from the board, results
shown with the kings or DGT's result pieces, a rotated board, a board that stops answering)."""

from __future__ import annotations

import chess

from touchmove.boards import chesslink
from touchmove.boards.adapter import KING_HOLD_MS, RESULT_STEADY_MS, PieceAdapter, rotate
from touchmove.boards.dgt import DgtTranslator
from touchmove.sim.pieces import start_pieces


def adapter_at(fen: str) -> PieceAdapter:
    a = PieceAdapter()
    a.full_report(start_pieces(chess.Board(fen)), 0)
    return a


def sq(name: str) -> int:
    return chess.parse_square(name)


def kinds(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(line["type"], line.get("sq") or line.get("piece") or line.get("result")) for line in lines]


def test_first_report_is_a_snapshot_with_pieces() -> None:
    a = PieceAdapter()
    out = a.full_report(start_pieces(chess.Board()), 5)
    assert out[0]["type"] == "snapshot" and out[0]["occ"] == "ffff00000000ffff"
    assert out[0]["pieces"] == chess.Board().board_fen()


def test_promotion_is_read_from_the_board() -> None:
    a = adapter_at("8/4P3/8/8/8/8/k7/4K3 w - - 0 1")
    a.square_report(sq("e7"), None, 100)
    out = a.square_report(sq("e8"), "N", 400)
    assert kinds(out) == [("place", "e8"), ("promote", "n")]


def test_promotion_new_piece_first_then_pawn_removed() -> None:
    a = adapter_at("8/4P3/8/8/8/8/k7/4K3 w - - 0 1")
    assert kinds(a.square_report(sq("e8"), "R", 100)) == [("place", "e8")]
    assert kinds(a.square_report(sq("e7"), None, 300)) == [("lift", "e7"), ("promote", "r")]


def test_a_rook_reaching_the_last_rank_is_no_promotion() -> None:
    a = adapter_at("8/8/8/8/8/8/k7/R3K3 w - - 0 1")
    a.square_report(sq("a1"), None, 100)      # held (a rook beside its king: castling may follow), no tick
    assert kinds(a.square_report(sq("a8"), "R", 300)) == [("lift", "a1"), ("place", "a8")]


def test_kings_in_the_centre_are_a_result_and_no_king_move() -> None:
    a = adapter_at("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    out = a.square_report(sq("e1"), None, 100) + a.square_report(sq("e8"), None, 200)
    out += a.square_report(sq("e4"), "K", 300)          # the other king is off the board: held back
    assert kinds(out) == [("lift", "e1"), ("lift", "e8")]
    out = a.square_report(sq("d5"), "k", 400)           # both on light centre squares: 1-0, once steady
    assert out == []
    assert a.tick(400 + RESULT_STEADY_MS - 1) == []
    out = a.tick(400 + RESULT_STEADY_MS)
    assert [line for line in out if line["type"] == "place"] == []
    assert [(line["result"], line["reason"], line["by"]) for line in out if line["type"] == "result"] == [
        ("1-0", "result shown with the kings", "board")]


def test_kings_on_squares_of_both_colours_are_a_draw() -> None:
    a = adapter_at("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    a.square_report(sq("e1"), None, 100)
    a.square_report(sq("e8"), None, 200)
    a.square_report(sq("d4"), "K", 300)
    out = a.square_report(sq("d5"), "k", 400) + a.tick(400 + RESULT_STEADY_MS)
    assert [line["result"] for line in out if line["type"] == "result"] == ["1/2-1/2"]


def test_a_king_held_in_the_centre_is_released_when_the_other_does_not_come() -> None:
    a = adapter_at("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    a.square_report(sq("e8"), None, 100)
    a.square_report(sq("e1"), None, 150)
    assert a.square_report(sq("e4"), "K", 200) == []
    assert kinds(a.tick(200 + KING_HOLD_MS)) == [("place", "e4")]


def test_a_king_move_into_the_centre_is_not_held() -> None:
    a = adapter_at("4k3/8/8/8/8/8/4K3/8 w - - 0 1")
    a.square_report(sq("e2"), None, 100)
    assert kinds(a.square_report(sq("e3"), "K", 200)) == [("place", "e3")]
    a.square_report(sq("e3"), None, 300)
    assert kinds(a.square_report(sq("e4"), "K", 400)) == [("place", "e4")]


def test_dgt_result_piece_is_a_result_and_never_a_piece() -> None:
    a = adapter_at("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    out = a.square_report(sq("d4"), "0-1", 100)
    assert out == []                                    # a claim only once it stands
    assert kinds(a.tick(100 + RESULT_STEADY_MS)) == [("result", "0-1")]
    assert a.square_report(sq("d4"), None, 2000) == []
    # gone for as long: withdrawn (the engine resumes the game once the pieces stand as in it)
    assert [(line["result"], line["by"]) for line in a.tick(2000 + RESULT_STEADY_MS)] == [("*", "board")]


GLITCH_FEN = "r1bqkb1r/ppp1pppp/2n5/3n4/4K3/8/PPPP1PPP/RNBQ1BNR b kq - 9 5"


def test_a_piece_misread_as_a_king_for_one_scan_is_nothing() -> None:
    """The d5 knight read as a black king for one DGT scan (the white king on e4: "kings in the centre"): no lift,
    no place, no result, then or later."""
    a = adapter_at(GLITCH_FEN)
    out = a.square_report(sq("d5"), "k", 1000) + a.tick(1100)
    out += a.square_report(sq("d5"), "n", 1250)
    for t in range(1300, 5000, 100):
        out += a.tick(t)
    assert out == []
    assert a.shown[sq("d5")] == "n" and a.shown[sq("e4")] == "K"


def test_a_misreading_whose_correction_comes_late_is_never_claimed() -> None:
    """The link (or the host) stalls for a second right after that one-scan misreading: by the clock the reading
    has stood RESULT_STEADY_MS, but the board has said nothing since, so the report that contradicts it may be on
    its way. It is: no claim, no move, then or later."""
    a = adapter_at(GLITCH_FEN)
    out = a.square_report(sq("d5"), "k", 1000)
    for t in range(1100, 2400, 100):
        out += a.tick(t, heard=1000)
        assert not a.confirmation_wanted(t) or t >= 1000 + RESULT_STEADY_MS
    assert a.confirmation_wanted(2300)
    out += a.square_report(sq("d5"), "n", 2400)        # the correction, a second late
    for t in range(2500, 5000, 100):
        out += a.tick(t)
    assert out == []
    assert a.shown[sq("d5")] == "n" and a.shown[sq("e4")] == "K"


def status(fen: str, **changed: str) -> bytes:
    """Return a ChessLink status message of ``fen``'s pieces with ``changed`` squares (name: piece letter)."""
    board = start_pieces(chess.Board(fen))
    for name, piece in changed.items():
        board[sq(name)] = piece
    return chesslink.encode("s" + chesslink.status_text(board))


def test_a_host_stamped_board_is_asked_before_a_result_is_claimed() -> None:
    """ChessLink reports carry no time: the bridge stamps them on arrival. A reading of the kings in the centre
    is claimed only once the board has answered something after it stood RESULT_STEADY_MS (a poll is sent at
    once); a correction that arrives before the answer ends it."""
    for corrected in (True, False):
        tr = chesslink.ChessLinkTranslator("/dev/ttyX")
        tr.feed(chesslink.encode("v0107") + status(GLITCH_FEN), 0)
        assert tr.adapter.synced
        lines = tr.feed(status(GLITCH_FEN, d5="k"), 1000)
        sent = b""
        for now in range(1100, 2500, 100):             # the board silent (stalled) for 1.4 s
            out, data = tr.tick(now)
            lines += out
            sent += data
        assert [line for line in lines if line["type"] == "result"] == []
        assert sent == chesslink.encode("V")           # asked once, right when the reading stood long enough
        if corrected:
            lines = tr.feed(status(GLITCH_FEN), 2500) + tr.feed(chesslink.encode("v0107"), 2510)
        else:
            lines = tr.feed(chesslink.encode("v0107"), 2510)
        for now in range(2600, 6000, 100):
            lines += tr.tick(now)[0]
        results = [line["result"] for line in lines if line["type"] == "result"]
        assert results == ([] if corrected else ["1-0"])


def test_a_result_piece_flickering_is_never_claimed() -> None:
    a = adapter_at("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    out: list[dict[str, object]] = []
    for i in range(40):                         # on and off every 300 ms for 12 s: never steady
        out += a.square_report(sq("d4"), "1-0" if i % 2 == 0 else None, 100 + 300 * i)
        out += a.tick(250 + 300 * i)
    assert out == []


def test_a_king_shown_in_the_centre_for_a_whole_report_stream_is_claimed_once() -> None:
    """Whole reports (ChessLink, Chessnut) repeating the same reading: one claim, then nothing more."""
    a = adapter_at(GLITCH_FEN)
    board = list(a.actual)
    board[sq("d5")] = "k"
    out: list[dict[str, object]] = []
    for t in range(1000, 4000, 100):
        out += a.full_report(board, t)
    assert [(line["type"], line.get("result")) for line in out if line["type"] == "result"] == [("result", "1-0")]


def test_rotated_start_is_turned_and_said() -> None:
    a = PieceAdapter()
    rotated = rotate(start_pieces(chess.Board()))
    out = a.full_report(rotated, 0)
    assert a.rotated and out[-1]["occ"] == "ffff00000000ffff"
    a2 = adapter_at(chess.STARTING_FEN)
    out = a2.full_report(rotated, 100)
    assert out[0]["type"] == "error" and out[0]["alert"] == "board_rotated"
    # e2-e4 on the rotated board: the board numbers e2 as d7
    out = a.square_report(63 - sq("e2"), None, 200) + a.square_report(63 - sq("e4"), "P", 300)
    assert kinds(out) == [("lift", "e2"), ("place", "e4")]


def test_a_board_that_stops_answering_is_an_alert_with_its_last_position() -> None:
    tr = DgtTranslator("/dev/ttyUSB0")
    tr.start(0)
    tr.board = "dgt-1"
    tr.adapter.full_report(start_pieces(chess.Board()), 0)
    lines: list[dict[str, object]] = []
    for now in range(0, 8000, 100):
        lines += tr.tick(now)[0]
    alerts = [line for line in lines if line.get("alert") == "board_silent"]
    assert len(alerts) == 1
    assert alerts[0]["detail"]["last_position"] == chess.Board().board_fen()  # type: ignore[index]
    back = tr.feed(bytes((0x93, 0, 5, 1, 7)), 9000)
    assert [line.get("alert") for line in back] == ["board_answering"]


def test_a_chess960_start_on_the_board_is_a_setup() -> None:
    a = PieceAdapter()
    b960 = chess.Board.from_chess960_pos(100)
    out = a.full_report(start_pieces(b960), 0)
    setups = [line for line in out if line["type"] == "setup"]
    assert setups == [{"t": 0, "type": "setup", "fen": b960.fen(), "chess960": True}]
    assert [line for line in a.full_report(start_pieces(chess.Board()), 10) if line["type"] == "setup"] == []


def test_chess960_game_from_the_board_through_the_engine() -> None:
    import random

    from touchmove.rules import Engine
    from touchmove.sim import harness
    from touchmove.sim.pieces import piece_timeline

    start = chess.Board.from_chess960_pos(100)
    moves = []
    b = start.copy()
    for _ in range(12):
        move = sorted(b.legal_moves, key=lambda m: m.uci())[3]
        moves.append(move)
        b.push(move)
    run = harness.run("chessnut", start, piece_timeline(start, moves, random.Random(4)))
    eng = Engine()              # nothing said about the game: the board's array tells it
    events = [e for r in run.records for e in eng.feed(r)] + eng.finish()
    got = [e.uci for e in events if e.type == "move"]  # type: ignore[attr-defined]
    assert got == [m.uci() for m in moves]


def test_one_whole_report_misreading_a_piece_as_a_king_is_nothing() -> None:
    """A DGT board dump, a ChessLink status or a Chessnut report that reads the d5 knight as a black king once (the
    white king on e4), then the board as it is: no record at all."""
    a = adapter_at(GLITCH_FEN)
    board = list(a.actual)
    misread = list(board)
    misread[sq("d5")] = "k"
    out = a.full_report(misread, 1000) + a.full_report(board, 1250)
    for t in range(1300, 4000, 100):
        out += a.full_report(board, t) + a.tick(t)
    assert out == []


def test_a_dump_with_kings_everywhere_is_no_result_until_it_stands() -> None:
    """A garbled dump with 33 kings on it (a draw, read as it is) is held back; gone at the next dump, nothing."""
    a = adapter_at(GLITCH_FEN)
    board = list(a.actual)
    garbled = ["K" if i % 2 else "k" for i in range(64)]
    out = a.full_report(garbled, 1000) + a.full_report(board, 1250)
    out += a.tick(1250 + RESULT_STEADY_MS)
    assert [line for line in out if line["type"] == "result"] == []


def test_a_held_placement_lifted_again_before_its_release_is_told_not_dropped() -> None:
    """A pawn reported on g4 with no pawn off the board (other white pawns standing: the scan may have seen the
    new square first) waits for another pawn's square to empty; lifted again before that, it is told, then its
    lift. Before, both were dropped: in Chessnut game 46 of bench/boards.py (harder hands) fxg4's position, shown
    as ...Bxg4 lifted the pawn, never reached the engine (the pawn had left the adapter's hand when the knight it
    took was pushed aside onto h5)."""
    a = adapter_at("q4rk1/1p2pp1p/2p1n2b/2Pp1bp1/1P1P3P/2N1PP2/1Q6/2BRNBK1 w - - 0 27")
    held = a.square_report(sq("g4"), "P", 1600)
    assert held == []                                      # waiting for another pawn's square to empty
    out = a.square_report(sq("g4"), None, 1850)            # taken before the hold ran out
    out += a.tick(3000)
    assert kinds(out) == [("place", "g4"), ("lift", "g4")]
    place, lift = out
    assert place["piece"] == "P" and int(str(lift["t"])) - int(str(place["t"])) >= 30


def test_a_victim_pushed_aside_after_an_adjustment_keeps_the_capturing_piece_in_the_hand() -> None:
    """Chessnut game 76 of bench/boards.py (harder hands): White adjusts his knight on b6 (the last piece put down
    is White's), lifts g3 for gxf4 and pushes the black pawn from f4 onto g4. That pawn put down next to its
    square, with a white pawn that can take it there in the hand, is the victim pushed aside, not Black's move
    ending: the g3 pawn stays in the hand, and its landing on f4 is told as the board showed it, before the knight
    Black moves next. Before, the pawn left the hand, its landing waited for another pawn's square to empty, and
    came after ...Ng6: both plies recovered with changes_lost."""
    a = adapter_at("3r2k1/1r1p3p/pN1Rp3/4n3/2P2p2/1P4P1/P4PKP/3R4 w - - 0 24")
    out = a.square_report(sq("b6"), None, 100) + a.square_report(sq("b6"), "N", 300)
    out += a.square_report(sq("g3"), None, 1000)
    out += a.square_report(sq("f4"), None, 1100) + a.square_report(sq("g4"), "p", 1100)
    out += a.square_report(sq("f4"), "P", 1300)
    assert kinds(out)[-1] == ("place", "f4")
    out += a.square_report(sq("g4"), None, 1500)
    out += a.square_report(sq("e5"), None, 1600) + a.square_report(sq("g6"), "n", 1700)
    assert kinds(out)[-4:] == [("place", "f4"), ("lift", "g4"), ("lift", "e5"), ("place", "g6")]


def test_a_capture_onto_the_square_of_a_piece_lifted_first_is_no_victim_pushed_aside() -> None:
    """Chessnut, fast replies, game 198 of bench/boards.py: ...hxg3 with White's g3 pawn lifted first, then hxg3
    at once, the h2 pawn seen on g3 before h2 empties. The black pawn landing where the white pawn stood is the
    capture, not a victim pushed aside: the g3 pawn leaves the hand, and the h2 pawn's landing waits for h2 to
    empty as before (with the first version of the pushed-aside reading it was told first, and both plies were
    recovered with changes_lost)."""
    a = adapter_at("r1bqkb1r/pppp1p2/2n1pn2/6B1/3P3p/2P2NP1/PP2P1BP/RN1QK2R b KQkq - 2 9")
    out = a.square_report(sq("g3"), None, 100) + a.square_report(sq("h4"), None, 600)
    out += a.square_report(sq("g3"), "p", 700) + a.square_report(sq("g3"), None, 800)
    out += a.square_report(sq("g3"), "P", 1200) + a.square_report(sq("h2"), None, 1260) + a.tick(2000)
    assert kinds(out)[-4:] == [("place", "g3"), ("lift", "g3"), ("lift", "h2"), ("place", "g3")]


def test_a_victim_pushed_aside_then_taken_off_leaves_no_piece_in_the_hand() -> None:
    """DGT, harder hands, game 275 of bench/boards.py: ...Ngxe5 pushes the e5 pawn onto f6 (the scan reads f6
    before e5 turns into the knight) and Black takes it off; later White plays dxe5 (e5's knight lifted, the pawn
    put on e5 before the scan reaches d4) and Black answers ...Nxe5 at once. The pawn put on f6 next to the
    square the knight's placement took it on is that victim pushed aside, never seen lifted: its lift from f6
    puts nothing in the hand. So the pawn named on e5 waits for another pawn's square to empty (d4's, told
    first), and White's d4 lift comes before Black's d7 one: the position after dxe5 reaches the engine. Before,
    the stale f6 pawn in the hand made the e5 pawn an adjustment, the d4 lift was held as a reply, told after
    d7's, and both plies were recovered with changes_lost (after a board_mismatch and two invented plies taken
    back)."""
    a = adapter_at("r2qr1k1/pp1n1ppp/2p5/4P3/3P1Nn1/2N3Q1/PP4PP/R4RK1 b - - 2 16")
    out = a.square_report(sq("g4"), None, 1000) + a.square_report(sq("f6"), "P", 1170)
    out += a.square_report(sq("e5"), "n", 1197) + a.tick(1635) + a.square_report(sq("f6"), None, 1643)
    out += a.square_report(sq("e5"), None, 4416) + a.square_report(sq("e5"), "P", 5062)
    out += a.square_report(sq("d4"), None, 5089) + a.square_report(sq("d7"), None, 5241)
    out += a.square_report(sq("e5"), None, 5303) + a.square_report(sq("f5"), "P", 5307)
    out += a.square_report(sq("e5"), "n", 5536) + a.square_report(sq("f5"), None, 6010) + a.tick(7000)
    told = kinds(out)
    d4, d7 = told.index(("lift", "d4")), told.index(("lift", "d7"))
    assert d4 < d7
    assert [line["piece"] for line in out[d4:d7] if line["type"] == "place"] == ["P"]    # (on e5)
    assert told[-1] == ("lift", "f5")
