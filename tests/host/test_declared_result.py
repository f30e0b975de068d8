"""A declared result (resignation, time, agreement): the ``result`` record ends the game, and is undone."""

from __future__ import annotations

import chess
import pytest

from touchmove import records
from touchmove.records import Lift, Place, RecordError, Result
from touchmove.rules import DeclaredEnd, Engine, Event, GameEnd, GameResumed, ResultRejected


def _move(engine: Engine, t: int, uci: str) -> list[Event]:
    """Play a quiet move by lift and place; return the events up to its settle time."""
    move = chess.Move.from_uci(uci)
    out = engine.feed(Lift(t, move.from_square))
    out += engine.feed(Place(t + 300, move.to_square))
    return out + engine.advance(t + 600)


def _played(*ucis: str) -> tuple[Engine, int]:
    engine = Engine()
    t = 1000
    for uci in ucis:
        _move(engine, t, uci)
        t += 1000
    return engine, t


def test_a_resignation_ends_the_game_with_its_result_and_termination() -> None:
    engine, t = _played("e2e4", "e7e5", "g1f3")
    events = engine.feed(Result(t, "1-0", "resignation"))
    assert [e.type for e in events] == ["game_end"]
    end = events[0]
    assert isinstance(end, DeclaredEnd)
    assert end.to_dict() == {"type": "game_end", "game": 1, "t": t, "result": "1-0", "reason": "resignation",
                             "article": "5.1.2", "by": "arbiter"}
    assert engine.state().game_over
    pgn = engine.games[-1].pgn()
    assert pgn.headers["Result"] == "1-0"
    assert pgn.headers["Termination"] == "resignation"
    assert pgn.end().board().fen() == engine.state().fen  # the moves are kept


def test_a_move_made_after_a_declared_result_resumes_the_game() -> None:
    engine, t = _played("e2e4", "e7e5")
    engine.feed(Result(t, "0-1", "time"))
    events = _move(engine, t + 1000, "g1f3")
    assert [e.type for e in events if e.type != "touch"] == ["game_resumed", "move"]
    resumed = next(e for e in events if isinstance(e, GameResumed))
    assert resumed.ply == 3
    assert engine.games[-1].result == "*"
    assert engine.games[-1].end_reason is None
    assert not engine.state().game_over
    assert engine.state().ply == 3


def test_a_piece_lifted_and_put_back_after_a_result_keeps_it() -> None:
    engine, t = _played("e2e4", "e7e5")
    engine.feed(Result(t, "1/2-1/2", "agreement"))
    events = engine.feed(Lift(t + 500, chess.G1)) + engine.feed(Place(t + 900, chess.G1)) + engine.advance(t + 3000)
    assert not any(isinstance(e, GameResumed | GameEnd) for e in events)
    assert engine.games[-1].result == "1/2-1/2"
    assert engine.state().game_over


def test_the_board_then_set_up_again_starts_the_next_game() -> None:
    engine, t = _played("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6")
    engine.feed(Result(t, "0-1", "resignation"))
    events = engine.feed(records.Snapshot(t + 5000, 0xFFFF00000000FFFF))
    assert [e.type for e in events] == ["game_start"]
    assert engine.games[0].result == "0-1"
    assert engine.games[1].result == "*"


def test_once_the_board_is_cleared_after_a_result_no_move_is_read() -> None:
    engine, t = _played("e2e4", "e7e5", "g1f3", "b8c6")
    engine.feed(Result(t, "1-0", "resignation"))
    occ = engine.state().occupancy
    cleared = occ & ~(chess.BB_RANK_1 | chess.BB_RANK_2)  # White's pieces taken off
    assert engine.feed(records.Snapshot(t + 1000, cleared)) == []
    assert engine.advance(t + 3000) == []
    # Put back but for the knight, which lands on a square a legal move would take it to: no move is read.
    back = (occ & ~chess.BB_F3) | chess.BB_H4
    events = engine.feed(records.Snapshot(t + 4000, back)) + engine.advance(t + 6000)
    assert not any(isinstance(e, GameResumed) for e in events)
    assert engine.games[-1].result == "1-0"


def test_a_result_declared_again_replaces_the_one_before() -> None:
    engine, t = _played("e2e4", "e7e5")
    engine.feed(Result(t, "1-0", "resignation"))
    events = engine.feed(Result(t + 100, "0-1", "time"))
    assert [(e.type, getattr(e, "result", None)) for e in events] == [("game_end", "0-1")]
    assert engine.feed(Result(t + 200, "0-1", "time")) == []  # the same again: nothing new
    assert engine.games[-1].pgn().headers["Result"] == "0-1"


def test_a_result_against_the_board_is_rejected_with_its_reason() -> None:
    engine, t = _played("f2f3", "e7e5", "g2g4", "d8h4")  # fool's mate: the board saw 0-1
    assert engine.games[-1].result == "0-1"
    events = engine.feed(Result(t, "1-0", "resignation"))
    assert len(events) == 1 and isinstance(events[0], ResultRejected)
    assert "already ended on the board: 0-1 (checkmate)" in events[0].reason
    assert events[0].to_dict()["type"] == "result_rejected"
    assert engine.games[-1].result == "0-1"
    assert engine.feed(Result(t + 10, "0-1", "resignation")) == []  # agrees with the board: its reason stands
    assert engine.games[-1].end_reason == "checkmate"


def test_a_result_with_no_game_on_is_rejected() -> None:
    engine = Engine()
    engine.feed(records.Snapshot(0, 0))  # an empty board: waiting for the start position
    events = engine.feed(Result(10, "1-0", "resignation"))
    assert len(events) == 1 and isinstance(events[0], ResultRejected)
    assert events[0].reason == "no game on this board"


def test_the_last_move_still_settling_is_made_before_the_result() -> None:
    engine, t = _played("e2e4")
    engine.feed(Lift(t, chess.E7))
    engine.feed(Place(t + 300, chess.E5))
    events = engine.feed(Result(t + 350, "1-0", "resignation"))  # within the settle time
    assert [e.type for e in events if e.type != "touch"] == ["move", "game_end"]
    assert engine.state().ply == 2


def test_a_takeback_after_a_declared_result_reopens_the_game() -> None:
    engine, t = _played("e2e4", "e7e5")
    engine.feed(Result(t, "1-0", "resignation"))
    events = engine.feed(records.TakebackRequest(t + 100, 2))
    assert [e.type for e in events] == ["takeback"]
    assert engine.games[-1].result == "*"
    assert not engine.state().game_over


@pytest.mark.parametrize(("obj", "reason"), [
    ({"result": "2-0", "reason": "resignation"}, "'result' must be one of"),
    ({"result": "*", "reason": "resignation"}, "'result' must be one of"),
    ({"reason": "resignation"}, "'result'"),
    ({"result": "1-0"}, "'reason'"),
    ({"result": "1-0", "reason": ""}, "'reason'"),
    ({"result": "1-0", "reason": 5}, "'reason'"),
    ({"result": "1-0", "reason": "x" * 41}, "at most 40"),
    ({"result": "1-0", "reason": "resign\nation"}, "printable"),
])
def test_bad_result_records_say_why(obj: dict[str, object], reason: str) -> None:
    with pytest.raises(RecordError) as info:
        records.from_dict({"t": 1, "type": "result", **obj})
    assert reason in str(info.value)


def test_a_result_record_round_trips() -> None:
    line = '{"t":7,"type":"result","result":"1/2-1/2","reason":"agreement"}'
    record = records.parse_line(line)
    assert record == Result(7, "1/2-1/2", "agreement")
    assert records.to_line(record) == line


def test_a_board_claim_is_published_at_the_boards_strength_and_withdrawn_by_the_board() -> None:
    """A result read from the pieces (``"by": "board"``): ``game_end`` by the board; ``*`` from the board with the
    pieces as in the game withdraws it (``game_resumed``); an arbiter's result outranks a later claim."""
    line = '{"t": 5, "type": "result", "result": "1-0", "reason": "result shown with the kings", "by": "board"}'
    assert records.to_line(records.parse_line(line)) == line.replace(": ", ":").replace(", ", ",")
    with pytest.raises(RecordError):
        records.parse_line('{"t": 5, "type": "result", "result": "*", "reason": "gone"}')
    with pytest.raises(RecordError):
        records.parse_line('{"t": 5, "type": "result", "result": "1-0", "reason": "x", "by": "arbiter"}')
    engine, t = _played("e2e4", "e7e5")
    events = engine.feed(Result(t, "1-0", "result shown with the kings", "board"))
    assert [(e.type, getattr(e, "by", None)) for e in events] == [("game_end", "board")]
    assert engine.feed(Result(t + 10, "1-0", "result shown with the kings", "board")) == []
    events = engine.feed(Result(t + 1500, "*", "result no longer shown", "board"))
    assert [e.type for e in events] == ["game_resumed"]
    assert not engine.state().game_over
    engine.feed(Result(t + 2000, "0-1", "resignation"))
    events = engine.feed(Result(t + 3000, "1-0", "result shown with the kings", "board"))
    assert [e.type for e in events] == ["result_rejected"]
    assert engine.games[-1].result == "0-1"
