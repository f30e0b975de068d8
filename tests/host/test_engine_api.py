"""The engine's contract with the shells around it: time only from records, deadlines, determinism."""

from __future__ import annotations

import random

import chess
from hypothesis import given, settings
from hypothesis import strategies as st

from touchmove.records import Lift, Place, Snapshot
from touchmove.rules import Engine, MoveMade
from touchmove.rules.footprints import Position, captured_square, fen_of
from touchmove.rules.outcome import game_over
from touchmove.sim.hands import Hands, Style, play


def test_a_move_waits_for_its_settle_time_then_advance_makes_it() -> None:
    engine = Engine(settle_ms=200)
    assert [e.type for e in engine.feed(Lift(1000, chess.E2))] == ["game_start"]
    # The lift is certain once the chatter window has passed: the touch is told then.
    assert [e.type for e in engine.feed(Place(1300, chess.E4))] == ["touch"]
    deadline = engine.next_deadline()
    assert deadline is not None and deadline <= 1300 + 200
    assert engine.advance(1300 + 199) == []  # not settled yet
    events = engine.advance(1300 + 200)
    assert [e.type for e in events] == ["move"]
    move = events[0]
    assert isinstance(move, MoveMade)
    assert (move.uci, move.ply, move.t) == ("e2e4", 1, 1300)  # made when the piece was released
    assert engine.state().ply == 1
    assert engine.state().in_sync


def test_time_never_runs_backwards() -> None:
    engine = Engine()
    engine.feed(Lift(5000, chess.E2))
    engine.feed(Place(5100, chess.E4))
    assert engine.advance(100) == []  # an old time is read as the latest one
    occupancy = (chess.BB_ALL & 0xFFFF00000000FFFF) & ~chess.BB_E2 | chess.BB_E4
    assert engine.feed(Snapshot(200, occupancy, "heartbeat")) == []  # read as t=5100: not settled
    assert [e.type for e in engine.advance(5300)] == ["move"]


def test_a_heartbeat_that_agrees_changes_nothing() -> None:
    engine = Engine()
    engine.feed(Snapshot(0, 0xFFFF00000000FFFF))
    assert engine.feed(Snapshot(1000, 0xFFFF00000000FFFF, "heartbeat")) == []
    assert engine.next_deadline() is None


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_replaying_the_same_records_gives_the_same_events(seed: int) -> None:
    rng = random.Random(seed)
    board = chess.Board()
    moves = []
    for _ in range(rng.randint(1, 30)):
        legal = list(board.legal_moves)
        if not legal:
            break
        moves.append(rng.choice(legal))
        board.push(moves[-1])
    hands = Hands(random.Random(seed), Style(clock=rng.random() < 0.5))
    play(chess.Board(), moves, hands)

    def run() -> list[dict[str, object]]:
        engine = Engine()
        out = [e.to_dict() for r in hands.records for e in engine.feed(r)]
        return out + [e.to_dict() for e in engine.finish()]

    first = run()
    assert first == run()
    played: dict[object, object] = {}  # ply -> move, as a consumer of the events keeps it
    for event in first:
        if event["type"] in ("move", "move_amended"):
            played[event["ply"]] = event["uci"]
    assert list(played.values()) == [m.uci() for m in moves]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_engine_writes_the_fen_of_python_chess(seed: int) -> None:
    # From the bitboards (fen_of), and move by move: a position after a move writes again only the squares the
    # move changes (castling in both encodings, en passant and promotions are played often here).
    rng = random.Random(seed)
    board = chess.Board(chess960=rng.random() < 0.3)
    if board.chess960:
        board.set_chess960_pos(rng.randrange(960))
    position = Position(board.copy())
    for _ in range(rng.randint(0, 120)):
        legal = list(board.legal_moves)
        if not legal:
            break
        special = [m for m in legal if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
        move = rng.choice(special if special and rng.random() < 0.5 else legal)
        board.push(move)
        position = position.after(move, board.copy(stack=False))
        assert fen_of(board) == board.fen()
        assert position.fen() == board.fen()


def test_every_legal_move_is_explained_by_its_own_footprint() -> None:
    for fen in [chess.STARTING_FEN, "r3k2r/pppq1ppp/2np1n2/2b1p3/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
                "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3", "3r4/4P3/8/8/8/8/k7/4K3 w - - 0 1"]:
        board = chess.Board(fen)
        position = Position(board)
        for move in board.legal_moves:
            if move.promotion not in (None, chess.QUEEN):
                continue
            after = board.copy()
            after.push(move)
            found = position.explain(after.occupied, chess.BB_ALL)
            assert found is not None and found.move == move, (fen, move)


def test_a_capture_takes_the_piece_on_its_square_en_passant_the_one_beside_it() -> None:
    board = chess.Board("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3")
    assert captured_square(board, chess.Move.from_uci("e5d6")) == chess.D5
    assert captured_square(board, chess.Move.from_uci("e5e6")) is None
    board = chess.Board("rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2")
    assert captured_square(board, chess.Move.from_uci("e4d3")) == chess.D4
    board = chess.Board("r3k2r/8/8/8/8/8/1p6/RN2K2R w KQkq - 0 1", chess960=True)
    assert captured_square(board, chess.Move.from_uci("b1a3")) is None
    assert captured_square(board, chess.Move.from_uci("e1h1")) is None      # the king onto its own rook
    assert captured_square(board, chess.Move.from_uci("a1a8")) == chess.A8


def test_a_lone_lift_explains_nothing() -> None:
    board = chess.Board("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2")
    position = Position(board)
    # e4 in the air: looks exactly like exd5 with the victim already gone, unless d5 was lifted.
    assert position.explain(board.occupied & ~chess.BB_E4, chess.BB_E4) is None
    assert position.continuable(board.occupied & ~chess.BB_E4)


def test_checkmate_takes_precedence_over_the_75_move_rule() -> None:
    board = chess.Board("7k/8/6K1/8/8/8/8/R7 w - - 149 100")
    board.push_san("Ra8#")
    assert game_over(board) == ("1-0", "checkmate", "5.1.1")
