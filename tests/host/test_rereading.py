"""Re-reading the last plies on a contradiction (``touchmove.rules.rereading``): which lines account for the square
changes seen, when one is adopted, and when the engine gives the mismatch to the arbiter instead."""

from __future__ import annotations

import chess

from touchmove.broadcast.live_pgn import LiveGame
from touchmove.records import Lift, Place, Record, Snapshot
from touchmove.rules import Engine
from touchmove.rules.events import Alert, Event, MoveMade, Takeback
from touchmove.rules.game_line import GameLine
from touchmove.rules.gamelog import GameRecord
from touchmove.rules.rereading import Reread, accounts_for, reread

# A black pawn on e4, white to move: d3 exd3 and d4 exd3 e.p. leave the same squares (and the same position).
START = "rnbqkbnr/pppp1ppp/8/8/4p3/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
SQ = chess.parse_square


def changes(*steps: str, t0: int = 1000, step: int = 100) -> list[tuple[int, chess.Square, bool]]:
    """Return square changes from steps such as ``d2-`` (lifted) and ``d3+`` (placed), ``step`` ms apart."""
    return [(t0 + i * step, SQ(s[:2]), s[2] == "+") for i, s in enumerate(steps)]


def game_with(moves: list[str], seen: list[tuple[int, chess.Square, bool]]) -> tuple[GameRecord, GameLine]:
    """Return a game of ``moves`` (UCI) from START and its line, the changes ``seen`` noted, every ply seen made at
    the start's time."""
    game = GameRecord(1, START, False, 0)
    line = GameLine(chess.Board(START).occupied, game)
    board = chess.Board(START)
    for uci in moves:
        board.push_uci(uci)
        line.push(board.peek(), board, 0)
    for change in seen:
        line.note_change(*change)
    return game, line


def after(*ucis: str) -> chess.Bitboard:
    board = chess.Board(START)
    for uci in ucis:
        board.push_uci(uci)
    return board.occupied


def test_a_line_is_accounted_for_by_its_lifts_and_landings_in_order() -> None:
    board = chess.Board(START)
    seen = changes("d2-", "d3+", "d3-", "e4-", "d3+")
    d3, exd3 = chess.Move.from_uci("d2d3"), chess.Move.from_uci("e4d3")
    now = after("d2d3", "e4d3")
    assert accounts_for(board, [d3, exd3], seen, 1000, now)
    # the capture before the move it answers: its landing came before the victim's square was left
    assert not accounts_for(board, [d3, exd3], changes("e4-", "d2-", "d3+"), 1000, now)
    # a ply whose piece was never lifted
    assert not accounts_for(board, [chess.Move.from_uci("c2c3")], seen, 1000, after("c2c3"))
    # a change before ``since`` does not count
    assert not accounts_for(board, [d3, exd3], seen, 1001, now)


def test_each_position_of_the_line_is_shown_for_a_moment() -> None:
    """d3 exd3, but another pawn (c2) was lifted before d3 landed and put back only after the capture: the board
    never showed the position after d3 (a piece off then that no ply moves): not this line."""
    board = chess.Board(START)
    d3, exd3 = chess.Move.from_uci("d2d3"), chess.Move.from_uci("e4d3")
    now = after("d2d3", "e4d3")
    held = changes("c2-", "d2-", "d3+", "d3-", "e4-", "d3+", "c2+")
    assert not accounts_for(board, [d3, exd3], held, 1000, now)
    put_back = changes("c2-", "d2-", "c2+", "d3+", "d3-", "e4-", "d3+")
    assert accounts_for(board, [d3, exd3], put_back, 1000, now)


def test_a_slid_piece_sensed_on_its_square_before_it_leaves_its_own_counts() -> None:
    board = chess.Board(START)
    slid = [(1000, SQ("d3"), True), (1060, SQ("d2"), False)]
    assert accounts_for(board, [chess.Move.from_uci("d2d3")], slid, 1000, after("d2d3"))
    late = [(1000, SQ("d3"), True), (1400, SQ("d2"), False)]
    assert not accounts_for(board, [chess.Move.from_uci("d2d3")], late, 1000, after("d2d3"))


def test_the_one_line_that_accounts_for_the_changes_is_adopted() -> None:
    # the game has d4 (the pawn read on its double step's square); the board shows d3 exd3 with no place on d4
    game, line = game_with(["d2d4"], changes("d2-", "d3+", "d3-", "e4-", "d3+"))
    found = reread(game, line, after("d2d3", "e4d3"))
    assert found == Reread(0, (chess.Move.from_uci("d2d3"), chess.Move.from_uci("e4d3")))


def test_two_lines_that_account_for_the_changes_are_left_to_the_arbiter() -> None:
    # the pawn stood on d4 a moment: d3 exd3 and d4 exd3 e.p. both account for every change
    seen = changes("d2-", "d3+", "d3-", "d4+", "d4-", "e4-", "d3+")
    game, line = game_with(["d2d4"], seen)
    assert reread(game, line, after("d2d3", "e4d3")) is None


def test_no_re_reading_across_changes_not_seen_or_forgotten() -> None:
    seen = changes("d2-", "d3+", "d3-", "e4-", "d3+")
    game, line = game_with(["d2d4"], [*seen[:2], (1150, -1, False), *seen[2:]])
    assert reread(game, line, after("d2d3", "e4d3")) is None    # a snapshot read as several changes
    game, line = game_with(["d2d4"], seen)
    line.reached[0] = None
    assert reread(game, line, after("d2d3", "e4d3")) is None    # the position before it not seen reached
    game, line = game_with(["d2d4"], seen)
    line.changes_from = 1
    assert reread(game, line, after("d2d3", "e4d3")) is None    # the changes since it partly forgotten


def test_the_change_log_keeps_the_last_plies() -> None:
    line = GameLine(chess.Board().occupied, GameRecord(1, chess.STARTING_FEN, False, 0))
    board = chess.Board()
    t = 0
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] * 20:
        for _ in range(10):
            t += 10
            line.note_change(t, SQ(uci[:2]), False)
            line.note_change(t, SQ(uci[:2]), True)
        board.push_uci(uci)
        line.push(board.peek(), board, t)
    assert len(line.changes) < 200
    assert line.changes_from <= line.reached[-4] and line.changes[0][0] >= line.changes_from  # type: ignore[operator]


def feed(engine: Engine, records: list[Record]) -> list[Event]:
    out: list[Event] = []
    for record in records:
        out += engine.feed(record)
    return out + engine.finish()


def broadcast_moves(events: list[Event]) -> list[str]:
    """Return the moves of the broadcaster's live game (what the round PGN shows) after ``events``."""
    game = LiveGame()
    for event in events:
        game.apply(event.to_dict())
    assert not game.needs_resync
    return [ply.uci for ply in game.moves]


def test_a_line_shorter_than_the_plies_it_replaces_is_not_taken() -> None:
    """Nf3 made, a6 made; then the knight is lifted from f3, the pawn put back on a7 and the knight lands on h3
    (the board never rests on the position before a6): Nh3 alone would account for every change, but a6 was seen
    made (released, resting): no line drops a ply seen made (a sleeve's knocked piece once read so dropped three):
    board_mismatch."""
    engine = Engine()
    steps = [("g1", False, 1000), ("f3", True, 1080), ("a7", False, 1800), ("a6", True, 1880), ("f3", False, 3000),
             ("a6", False, 3080), ("a7", True, 3160), ("h3", True, 3240)]
    records: list[Record] = [Place(t, SQ(sq)) if placed else Lift(t, SQ(sq)) for sq, placed, t in steps]
    events = feed(engine, records)
    assert [m.uci() for m in engine.games[0].moves] == ["g1f3", "a7a6"]
    assert not any(isinstance(e, Takeback) for e in events)
    assert any(isinstance(e, Alert) and e.code == "board_mismatch" for e in events)
    game, line = engine.games[0], engine.line
    assert reread(game, line, engine.occupancy) is None


def test_a_re_read_line_is_published_as_amendments_then_moves() -> None:
    """Rd8-d2, stood on d3 for 800 ms (amended to Rd3 as moved after release), Rxd2, a6: the re-read gives
    ``move_amended`` for the ply replaced and ``move`` for the plies after, and no mismatch."""
    fen = "3r2k1/p4ppp/8/8/8/8/P4PPP/3R2K1 b - - 0 1"
    engine = Engine(fen=fen)
    steps = [("d8", False, 1000), ("d2", True, 1080), ("d2", False, 1700), ("d3", True, 1800), ("d3", False, 2600),
             ("d1", False, 2800), ("d2", True, 3500), ("a7", False, 4500), ("a6", True, 4580)]
    records: list[Record] = [Place(t, SQ(sq)) if placed else Lift(t, SQ(sq)) for sq, placed, t in steps]
    events = feed(engine, records)
    assert [m.uci() for m in engine.games[0].moves] == ["d8d2", "d1d2", "a7a6"]
    told = [(type(e).__name__, e.ply, e.uci) for e in events if isinstance(e, MoveMade)]
    assert told[-3:] == [("MoveAmended", 1, "d8d2"), ("MoveMade", 2, "d1d2"), ("MoveMade", 3, "a7a6")]
    assert broadcast_moves(events) == ["d8d2", "d1d2", "a7a6"]
    assert not any(isinstance(e, Alert) and e.code == "board_mismatch" for e in events)


def test_a_line_may_end_with_the_next_move_in_the_hand() -> None:
    """e5-e6, the sleeve knocks the f7 pawn onto f6 (read as f6, resting 480 ms) and puts it back; fxe6 at once,
    the sleeve lifting f5 a moment; then the board rests 1.4 s with fxe6's pieces in the hand (f5 and e6 off). The
    plies made (e6 fxe6) account for every change, the next one under way: fxe6 replaces f6, no mismatch
    (carlsen-chesscom-2014#203, seed 250, in test_hand_styles' hypothesis examples)."""
    engine = Engine(fen="r1b2nrk/1pB2pp1/2p4p/p3PPq1/P2N4/1PQ4P/1P4P1/3RR1K1 w - - 3 29")
    steps = [("e5", False, 1000), ("e6", True, 1126), ("e6", False, 1130), ("e6", True, 1134), ("f7", False, 1176),
             ("f6", True, 1200), ("f6", False, 1676), ("f7", True, 1738), ("f7", False, 1843), ("e6", False, 1930),
             ("e6", True, 2068), ("f5", False, 2128), ("f5", True, 2873), ("f5", False, 2962), ("e6", False, 3098),
             ("e6", True, 4488)]
    records: list[Record] = [Place(t, SQ(sq)) if placed else Lift(t, SQ(sq)) for sq, placed, t in steps]
    final = chess.Board("r1b2nrk/1pB2pp1/2p4p/p3PPq1/P2N4/1PQ4P/1P4P1/3RR1K1 w - - 3 29")
    for uci in ["e5e6", "f7e6", "f5e6"]:
        final.push_uci(uci)
    events = feed(engine, [*records, Snapshot(5500, final.occupied, "heartbeat")])
    assert [m.uci() for m in engine.games[0].moves] == ["e5e6", "f7e6", "f5e6"]
    assert broadcast_moves(events) == ["e5e6", "f7e6", "f5e6"]
    assert not any(isinstance(e, Alert) and e.code == "board_mismatch" for e in events)
