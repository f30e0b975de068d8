"""Lost changes and undone decisions: the recovery search, the lost-data mode over real games, resync records,
and what consumers do with ``game_resumed``."""

from __future__ import annotations

import json
import random
from functools import cache

import chess
import pytest
from games import require_games
from hypothesis import given, settings
from hypothesis import strategies as st

from touchmove import records
from touchmove.broadcast.live_pgn import LiveGame
from touchmove.hands import Hands, Style
from touchmove.lost_data import lost_game
from touchmove.rules import Alert, Engine, RecoveredMove
from touchmove.rules.recovery import explanations, position_key

SAMPLE_EVERY = 6  # the lost-data test plays every sixth shared game (bench/lost_data.py runs them all)


@cache
def games() -> list[tuple[str, chess.Board, list[chess.Move]]]:
    return require_games()


def test_the_only_sequence_is_found_and_a_capture_is_told_from_a_piece_in_the_hand() -> None:
    board = chess.Board()
    after = board.copy()
    for san in ("e4", "e5", "Nf3"):
        after.push_san(san)
    found = explanations(board, after.occupied)
    assert found is not None and ["e4", "e5", "Nf3"] in [e.sans(board) for e in found]
    # Other orders of the same plies (transpositions) reach the same position: nothing else does.
    assert {position_key(e.board) for e in found} == {position_key(after)}
    assert not any(e.in_progress for e in found)


def test_nothing_explains_an_impossible_board_and_the_search_stays_bounded() -> None:
    board = chess.Board()
    assert explanations(board, board.occupied ^ chess.BB_E2 ^ chess.BB_E5 ^ chess.BB_D7 ^ chess.BB_A1) in ([], None)
    assert explanations(board, 0xFFFF) == []  # black's pieces gone: no captures possible that fast
    # A tiny budget gives up instead of running on.
    assert explanations(board, chess.BB_RANK_1 | chess.BB_RANK_8, max_nodes=10) in ([], None)


def test_the_search_can_be_bound_to_first_plies_and_to_a_least_length() -> None:
    # The queen's slide c3-c7 sensed on c4; h6 and Qxf7 lost: bound to the queen's plies along that line.
    board = chess.Board("5r1k/5qpp/8/3N4/8/2Q5/8/K7 w - - 0 1")
    after = board.copy()
    for san in ("Qc7", "h6", "Qxf7"):
        after.push_san(san)
    slides = [chess.Move.from_uci(f"c3{sq}") for sq in ("c4", "c5", "c6", "c7", "c8")]
    found = explanations(board, after.occupied, first=slides)
    assert found is not None and ["Qc7", "h6", "Qxf7"] in [e.sans(board) for e in found]
    assert all(e.moves[0] in slides for e in found)
    # Without Qc7 among the first plies, the capture on f7 is not found; none is shorter.
    without = explanations(board, after.occupied, first=[m for m in slides if m.uci() != "c3c7"])
    assert without is not None and ["Qc7", "h6", "Qxf7"] not in [e.sans(board) for e in without]
    assert explanations(board, after.occupied, first=slides, max_plies=2) == []
    assert explanations(board, after.occupied, first=slides, min_plies=3, max_plies=3) == found


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_random_lost_plies_are_among_the_explanations(seed: int, plies: int) -> None:
    """Whatever legal plies were lost, the search returns them (or a shorter or as short sequence)."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(rng.randrange(0, 20)):
        moves = list(board.legal_moves)
        if not moves:
            return
        board.push(rng.choice(moves))
    start = board.copy(stack=False)
    lost = []
    for _ in range(plies):
        moves = [m for m in board.legal_moves if m.promotion in (None, chess.QUEEN)]
        if not moves:
            return
        lost.append(rng.choice(moves))
        board.push(lost[-1])
    found = explanations(start, board.occupied)
    if found is None:
        return  # the search gave up (bounded): the arbiter resyncs
    assert found, "the lost plies themselves explain the board"
    length = min(len(e.moves) + e.in_progress for e in found)
    assert length <= plies
    if length == plies:
        assert position_key(board) in {position_key(e.board) for e in found if not e.in_progress} or any(
            e.in_progress for e in found)


def replay(recording: list[records.Record], board: chess.Board) -> tuple[Engine, list[Alert]]:
    engine = Engine(fen=board.fen(), chess960=board.chess960)
    alerts: list[Alert] = []
    for record in recording:
        alerts += [e for e in engine.feed(record) if isinstance(e, Alert)]
    alerts += [e for e in engine.finish() if isinstance(e, Alert)]
    return engine, alerts


def test_lost_windows_over_a_sample_of_real_games() -> None:
    """A 0.5-8 s window of a game's records lost, then the reconnection snapshot, in every SAMPLE_EVERY-th shared
    game (the same windows as bench/lost_data.py, which runs them all): every game whose window has one legal
    explanation comes back exactly, no illegal_move is raised in any, and most of the others come back too."""
    failures = []
    exact = sampled = 0
    for index, (name, board, moves) in enumerate(games()):
        if index % SAMPLE_EVERY:
            continue
        lost = lost_game(board, moves, random.Random(f"0-{index}"))
        engine, alerts = replay(lost.recording, board)
        back = engine.games[0].moves == moves
        illegal = [a for a in alerts if a.code == "illegal_move"]
        if illegal or (lost.kind == "one explanation" and not back):
            failures.append(f"{name} (bench/lost_data.py --only {index}): {lost.kind}, "
                            f"{'exact' if back else 'not exact'}, {len(illegal)} illegal_move")
        exact += back
        sampled += 1
    assert not failures, failures
    assert exact >= 0.85 * sampled, f"{exact} of {sampled} games came back exactly"


def test_a_lost_window_with_one_explanation_comes_back_with_recovered_moves() -> None:
    board = chess.Board()
    hands = Hands(random.Random(3), Style(chatter=0, bounce=0, slide=0, overlap=0))
    position = board.copy()
    moves = [position.push_san(san) or position.peek() for san in ("e4", "e5", "Nf3", "Nc6", "Bb5", "a6")]
    position = board.copy()
    cut = 0
    for index, move in enumerate(moves):
        if index == 2:
            cut = len(hands.records)
        hands.move(position, move)
        position.push(move)
        if index == 3:
            lost_end = len(hands.records)
    after_nc6 = chess.Board()
    for move in moves[:4]:
        after_nc6.push(move)
    recording = [*hands.records[:cut], records.Snapshot(hands.records[lost_end].t - 1, after_nc6.occupied)]
    recording += hands.records[lost_end:]
    engine = Engine()
    events = []
    for record in recording:
        events += engine.feed(record)
    events += engine.finish()
    assert engine.games[0].moves == moves
    recovered = [e for e in events if isinstance(e, RecoveredMove)]
    assert [e.san for e in recovered] == ["Nf3", "Nc6"]
    assert json.loads(recovered[0].to_json())["recovered"] is True
    lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    assert lost and lost[0].detail["plies"] == ["Nf3", "Nc6"] and lost[0].detail["blind_ms"] > 0


@pytest.mark.parametrize("line, error", [
    ('{"t":1,"type":"resync"}', "either 'moves'"),
    ('{"t":1,"type":"resync","moves":["e4"],"fen":"8/8/8/8/8/8/8/K6k w - - 0 1"}', "either 'moves'"),
    ('{"t":1,"type":"resync","moves":"e4"}', "list of SAN"),
    ('{"t":1,"type":"resync","moves":[""]}', "list of SAN"),
    ('{"t":1,"type":"resync","fen":"nonsense"}', "invalid FEN"),
])
def test_bad_resync_records_get_a_clear_error(line: str, error: str) -> None:
    with pytest.raises(records.RecordError, match=error):
        records.parse_line(line)


@given(st.lists(st.sampled_from(["e4", "e2e4", "Nf3", "O-O", "exd5", "h8=Q", "Kxf7+"]), max_size=5))
def test_resync_records_round_trip(moves: list[str]) -> None:
    record = records.Resync(5, tuple(moves))
    assert records.parse_line(records.to_line(record)) == record


def test_resync_from_a_recording_replays_the_same() -> None:
    fen = "r1bqk1nr/pppp1ppp/2n5/2b1p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
    occ = records.format_occupancy(chess.Board(fen).occupied)
    lines = [f'{{"t":0,"type":"heartbeat","occ":"{occ}"}}', '{"t":100,"type":"snapshot","occ":"ddef00141c00ef9f"}',
             '{"t":200,"type":"resync","moves":["Nd4","Nxd4"]}']
    engine = Engine(fen=fen)
    events = []
    for record in records.read(lines):
        assert not isinstance(record, records.Problem)
        events += engine.feed(record)
    assert [m.uci() for m in engine.games[0].moves] == ["f3d4", "c6d4"]
    assert engine.state().in_sync
    candidates = [e.detail.get("candidates") for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    assert len(candidates) == 1 and sorted(candidates[0]) == [["Nd4", "Nxd4"], ["Nxe5", "Nd4"]]  # type: ignore[arg-type]


def test_the_live_pgn_drops_the_result_when_the_game_resumes() -> None:
    game = LiveGame()
    game.apply({"type": "game_start", "game": 1, "fen": "k7/p1P5/8/8/8/8/8/K7 w - - 0 1", "t": 0})
    game.apply({"type": "move", "game": 1, "ply": 1, "uci": "c7c8q", "san": "c8=Q#", "t": 1})
    assert game.apply({"type": "game_end", "game": 1, "result": "1-0", "reason": "checkmate", "t": 1})
    assert game.results.effective() == "1-0"
    assert game.apply({"type": "move_amended", "game": 1, "ply": 1, "uci": "c7c8n", "san": "c8=N", "t": 2})
    game.apply({"type": "game_resumed", "game": 1, "ply": 2, "t": 2})
    assert game.results.effective() == "*"
    assert game.apply({"type": "move", "game": 1, "ply": 2, "uci": "a8b8", "san": "Kb8", "t": 2})
    # A game end withdrawn on its own (the move stays, e.g. read again later): the result goes.
    other = LiveGame()
    other.apply({"type": "game_start", "game": 1, "fen": chess.STARTING_FEN, "t": 0})
    other.apply({"type": "move", "game": 1, "ply": 1, "uci": "e2e4", "san": "e4", "t": 1})
    assert other.apply({"type": "game_end", "game": 1, "result": "1/2-1/2", "reason": "stalemate", "t": 1})
    assert other.apply({"type": "game_resumed", "game": 1, "ply": 2, "t": 2})
    assert other.results.effective() == "*"
