"""Piece identity in the rules engine: a wrong piece put down is a board_mismatch naming the pieces, a promotion
is made with the piece the board names; records without pieces give the very events they gave before."""

from __future__ import annotations

import chess

from touchmove.records import Lift, Place, Record, Snapshot
from touchmove.rules import Engine, Event


def feed(engine: Engine, recs: list[Record]) -> list[Event]:
    return [e for r in recs for e in engine.feed(r)] + engine.finish()


def alerts(events: list[Event], code: str) -> list[Event]:
    return [e for e in events if e.type == "alert" and e.code == code]  # type: ignore[attr-defined]


def test_a_wrong_piece_put_down_is_a_board_mismatch_naming_the_pieces() -> None:
    recs: list[Record] = [Snapshot(0, chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8),
                          Lift(1000, chess.E2), Place(1200, chess.E4, piece="P"),
                          Lift(3000, chess.E7), Place(3200, chess.E5, piece="p"),
                          Lift(5000, chess.F1), Place(5200, chess.C4, piece="N")]    # a knight where the bishop goes
    events = feed(Engine(), recs)
    assert [e.uci for e in events if e.type == "move"] == ["e2e4", "e7e5", "f1c4"]  # type: ignore[attr-defined]
    [mismatch] = alerts(events, "board_mismatch")
    assert mismatch.detail["pieces"] == [{"sq": "c4", "expected": "B", "found": "N"}]  # type: ignore[attr-defined]


def test_pieces_swapped_are_named_at_the_next_move() -> None:
    recs: list[Record] = [Snapshot(0, chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8),
                          Lift(500, chess.B1), Lift(520, chess.C1), Place(700, chess.B1, piece="B"),
                          Place(760, chess.C1, piece="N"),                       # knight and bishop swapped
                          Lift(1500, chess.E2), Place(1700, chess.E4, piece="P")]
    events = feed(Engine(), recs)
    [mismatch] = alerts(events, "board_mismatch")
    assert mismatch.detail["pieces"] == [{"sq": "b1", "expected": "N", "found": "B"},  # type: ignore[attr-defined]
                                         {"sq": "c1", "expected": "B", "found": "N"}]


def test_the_promoted_piece_is_read_from_the_board() -> None:
    fen = "8/4P3/8/8/8/k7/8/4K2R w - - 0 1"
    recs: list[Record] = [Lift(1000, chess.E7), Place(1500, chess.E8, piece="N")]
    events = feed(Engine(fen=fen), recs)
    assert [e.uci for e in events if e.type in ("move", "move_amended")] == ["e7e8n"]  # type: ignore[attr-defined]
    assert alerts(events, "promotion_unverified") == []


def test_records_without_pieces_give_the_same_events() -> None:
    fen = "8/4P3/8/8/8/k7/8/4K2R w - - 0 1"
    plain = feed(Engine(fen=fen), [Lift(1000, chess.E7), Place(1500, chess.E8)])
    assert [e.type for e in plain] == ["game_start", "touch", "move", "alert"]
    assert alerts(plain, "promotion_unverified")


def test_the_start_position_is_checked_piece_by_piece() -> None:
    wrong = chess.Board()
    wrong.set_piece_at(chess.D1, chess.Piece.from_symbol("K"))
    wrong.set_piece_at(chess.E1, chess.Piece.from_symbol("Q"))     # king and queen swapped
    events = feed(Engine(), [Snapshot(0, wrong.occupied, pieces=wrong.board_fen())])
    assert events[0].type == "game_start"
    [mismatch] = alerts(events, "board_mismatch")
    assert mismatch.detail["pieces"] == [{"sq": "d1", "expected": "Q", "found": "K"},  # type: ignore[attr-defined]
                                         {"sq": "e1", "expected": "K", "found": "Q"}]


def test_a_snapshot_with_pieces_round_trips_and_bad_pieces_are_an_error() -> None:
    import pytest

    from touchmove import records

    rec = records.parse_line('{"t":1,"type":"snapshot","occ":"ffff00000000ffff","pieces":"8/8/8/8/8/8/8/8"}')
    assert isinstance(rec, records.Snapshot) and rec.pieces == "8/8/8/8/8/8/8/8"
    assert '"pieces":"8/8/8/8/8/8/8/8"' in records.to_line(rec)
    with pytest.raises(records.RecordError, match="FEN piece placement"):
        records.parse_line('{"t":1,"type":"snapshot","occ":"ff","pieces":"9/x"}')


def test_answers_put_down_before_the_move_they_answer_was_made_are_no_wrong_piece() -> None:
    """Fast replies (an answer 60-120 ms after the move, before the engine made it): the piece the answer puts
    on a square is judged once the answer is made, never against the move it answers."""
    import random

    from tests.host.games import require_games
    from touchmove.sim import hands, harness
    from touchmove.sim.pieces import piece_timeline

    fast = hands.Style(promote_record=False, bullet_recapture=0.8, bullet=0.3, think_ms=(100, 600))
    for i, (name, start, moves) in enumerate(require_games()[::60]):
        run = harness.run("chessnut", start, piece_timeline(start, moves, random.Random(i), fast), seed=i)
        engine = Engine(fen=None if start.fen() == chess.STARTING_FEN else start.fen())
        named = [e for e in alerts(feed(engine, run.records), "board_mismatch")
                 if e.detail.get("pieces")]  # type: ignore[attr-defined]
        assert named == [], name


def test_a_promotion_is_not_named_by_the_answer_that_captures_it() -> None:
    """a8=Q and ...Bxa8 at once (bullet): the black bishop landing on a8 before the promotion was made does not
    name the promoted piece (the piece must be the promoting side's)."""
    fen = "8/P7/2b5/8/8/k7/8/4K2R w - - 0 1"
    recs: list[Record] = [Lift(1000, chess.A7), Place(1100, chess.A8, piece="Q"), Lift(1150, chess.C6),
                          Lift(1170, chess.A8), Place(1250, chess.A8, piece="b")]
    events = feed(Engine(fen=fen), recs)
    moves = [e.uci for e in events if e.type in ("move", "move_amended")]  # type: ignore[attr-defined]
    assert moves[0] in ("a7a8q",) and moves[-1] == "c6a8"
