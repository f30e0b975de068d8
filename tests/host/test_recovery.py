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

from tests.boards.test_boards_through_engine import published
from touchmove import records
from touchmove.broadcast.live_pgn import LiveGame
from touchmove.rules import Alert, Engine, Event, RecoveredMove
from touchmove.rules.recovery import MAX_NODES, explanations, plies_tried, position_key, search
from touchmove.sim.hands import Hands, Style
from touchmove.sim.lost_data import lost_game

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


@pytest.mark.parametrize("settled", [False, True])
def test_a_recovered_ply_amended_later_is_named_again_by_a_changes_lost_alert(settled: bool) -> None:
    """a6 and Qf3's queen lifted were lost: the snapshot shows a6 played and f3 empty, which only a6 Qxf6
    completes; the queen then lands on b3 (Qb3 amends Qxf6). A changes_lost alert names Qb3 after the amendment
    (issue 21). ``settled``: a heartbeat came after Qf3 (else Qf3 itself was made when its settle time ran out, so
    its piece sliding on further is followed too, and the recovery goes through hypotheses)."""
    board = chess.Board()
    hands = Hands(random.Random(3), Style(chatter=0, bounce=0, slide=0, overlap=0))
    for san in ("e4", "Nf6", "Qf3"):
        move = board.parse_san(san)
        hands.move(board, move)
        board.push(move)
    t = hands.records[-1].t + 3000
    recording: list[records.Record] = list(hands.records)
    if settled:
        recording.append(records.Snapshot(t - 2000, board.occupied, type="heartbeat"))
    shown = (board.occupied & ~chess.BB_A7 & ~chess.BB_F3) | chess.BB_A6
    recording += [records.Snapshot(t, shown), records.Place(t + 800, chess.B3)]
    engine = Engine()
    events = []
    for record in recording:
        events += engine.feed(record)
    events += engine.advance(t + 5000)
    events += engine.finish()
    assert [m.uci() for m in engine.games[0].moves[3:]] == ["a7a6", "f3b3"]
    lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    named = [a.detail["plies"] for a in lost if "plies" in a.detail]
    assert named and named[-1][-2:] == ["a6", "Qb3"], named
    last = lost[-1]
    assert last.ply == lost[0].ply    # it supersedes the alert that named Qxf6 (the same ply)
    if settled:
        # The board contradicts the plies recovered a moment ago: searched again, a6 Qb3 recovered and named.
        assert "Qb3" in [e.san for e in events if isinstance(e, RecoveredMove)]
    else:
        # The line followed amends Qxf6 to Qb3: the alert that named Qxf6 is superseded, after the move_amended.
        assert last.detail["amended"] == {"ply": 5, "replaces": "Qxf6", "played": "Qb3"}
        assert events.index(last) > next(i for i, e in enumerate(events) if e.type == "move_amended")


def lost_line(seed: int, plies: int) -> tuple[chess.Board, list[chess.Move], chess.Board] | None:
    """A shared game cut at a random point: the position before, ``plies`` real plies from there, the position
    after them (None: the game is too short)."""
    rng = random.Random(seed)
    _, start, moves = rng.choice(games())
    if len(moves) < plies + 5:
        return None
    at = rng.randrange(4, len(moves) - plies + 1)
    board = start.copy()
    for move in moves[:at]:
        board.push(move)
    sure = board.copy(stack=False)
    for move in moves[at:at + plies]:
        board.push(move)
    return sure, moves[at:at + plies], board


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 100_000), st.integers(1, 8))
def test_the_bounds_never_cut_the_true_line(seed: int, plies: int) -> None:
    """Up to 8 real plies lost from a shared game: at every position along them, the search tries the next real
    ply (the bounds from the snapshot, per side and on the squares before a ply is made, only cut lines that
    cannot reach the occupancy shown); a move under way at the end too."""
    cut = lost_line(seed, plies)
    if cut is None:
        return
    sure, lost, after = cut
    board = sure.copy()
    for index, move in enumerate(lost):
        tried = plies_tried(board, after.occupied, plies - index)
        queen = chess.Move(move.from_square, move.to_square, chess.QUEEN if move.promotion else None)
        assert tried is not None and queen in tried, f"{sure.fen()} {[m.uci() for m in lost]} at {index}"
        board.push(move)
    if plies > 1:
        # the last ply under way: its piece in the hand (the snapshot shows it lifted)
        lifted = after.occupied & ~chess.BB_SQUARES[lost[-1].to_square]
        board = sure.copy()
        for index, move in enumerate(lost[:-1]):
            tried = plies_tried(board, lifted, plies - 1 - index, in_progress=True)
            queen = chess.Move(move.from_square, move.to_square, chess.QUEEN if move.promotion else None)
            assert tried is not None and queen in tried, f"{sure.fen()} {[m.uci() for m in lost]} at {index}"
            board.push(move)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 100_000), st.integers(1, 8))
def test_the_true_line_is_found_when_it_is_the_only_one(seed: int, plies: int) -> None:
    """Up to 8 real plies lost: a search that did not give up returns the true position, or lines as short or
    shorter; when one position explains the board at that length, it is the true one."""
    cut = lost_line(seed, plies)
    if cut is None:
        return
    sure, _, after = cut
    result = search(sure, after.occupied)
    if result.gave_up:
        return  # said so (the alert says "gave up"): the arbiter resyncs; the test above checks the bounds
    assert result.found, "the lost plies themselves explain the board"
    length = min(len(e.moves) + e.in_progress for e in result.found)
    assert length <= plies
    positions = {position_key(e.board) for e in result.found if not e.in_progress}
    if length == plies:
        assert position_key(after) in positions or any(e.in_progress for e in result.found)
    if length == plies and len(positions) == 1 and not any(e.in_progress for e in result.found):
        assert positions == {position_key(after)}


def test_a_search_that_gave_up_is_told_from_one_that_found_nothing() -> None:
    """Eight plies of a game (many positions fit on the way) exhaust the search's bound: it says it gave up, and
    the changes_lost alert says so; a pawn that cannot have reached the first rank is searched to the end: nothing
    found, and the alert says no legal sequence leads there."""
    crowded = chess.Board("r1bqk2r/ppppBppp/2nn4/1B2p3/3P4/5N2/PPP2PPP/RN1Q1RK1 b kq - 0 7")
    shown = 0x6DEF40120024E669
    result = search(crowded, shown)
    assert result.gave_up and not result.ambiguous and result.nodes > MAX_NODES
    empty = chess.Board("7k/8/8/8/8/8/4P3/7K w - - 0 1")
    impossible = chess.BB_H8 | chess.BB_H1 | chess.BB_E1
    result = search(empty, impossible)
    assert not result.gave_up and result.found == []
    for board, occ, said in ((crowded, shown, "gave up"), (empty, impossible, "exhausted")):
        engine = Engine(fen=board.fen())
        events = engine.feed(records.Snapshot(0, board.occupied)) + engine.feed(records.Snapshot(5000, occ))
        events += engine.advance(9000)
        lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
        assert [(a.detail["candidates"], a.detail["search"]) for a in lost] == [([], said)]


def test_a_last_ply_en_passant_is_not_cut() -> None:
    """...f5 and exf6 (en passant) lost: the capture changes three squares, so the bound's slack for it is two.
    It was one: the line was cut and only ...f6 exf6 (and ...f5 with the capture under way) were found."""
    board = chess.Board("4k3/5p2/8/4P3/8/8/8/4K3 b - - 0 1")
    after = board.copy()
    for uci in ("f7f5", "e5f6"):
        after.push_uci(uci)
    found = explanations(board, after.occupied)
    assert found is not None
    assert ["f5", "exf6"] in [e.sans(board) for e in found]
    assert {position_key(e.board) for e in found} == {position_key(after)}


#: The Opera game's first 14 plies (to 7... Qe7) and the three its crash while the disk was full lost (issue 21):
#: Nc3 c6 Bg5 and Bg5 c6 Nc3 reach the same position, which the board cannot tell apart.
OPERA_14 = ("e4", "e5", "Nf3", "d6", "d4", "Bg4", "dxe5", "Bxf3", "Qxf3", "dxe5", "Bc4", "Nf6", "Qb3", "Qe7")
PLAYED = ("Nc3", "c6", "Bg5")


def opera_window(published: tuple[str, ...] | None, *, before: bool) -> tuple[Engine, list[Event]]:
    """The engine sees the first 14 plies made, then a snapshot of the position after Nc3 c6 Bg5 (their changes
    lost); the bridge's published plies (``published``) come before the snapshot (``before``) or after it."""
    board = chess.Board()
    hands = Hands(random.Random(5), Style(chatter=0, bounce=0, slide=0, overlap=0))
    for san in OPERA_14:
        move = board.parse_san(san)
        hands.move(board, move)
        board.push(move)
    for san in PLAYED:
        board.push_san(san)
    t = hands.records[-1].t + 3000
    evidence = [] if published is None else [records.Published(t - 1000 if before else t + 1000, published)]
    recording = [*hands.records, *(evidence if before else []), records.Snapshot(t, board.occupied),
                 *([] if before else evidence)]
    engine = Engine()
    events: list[Event] = []
    for record in recording:
        events += engine.feed(record)
    events += engine.finish()
    return engine, events


def sans(engine: Engine, first: int = 14) -> list[str]:
    board = engine.games[0].board(first)
    return [board.san_and_push(move) for move in engine.games[0].moves[first:]]


def test_plies_recovered_in_several_orders_are_taken_in_the_order_the_bridge_published() -> None:
    # Without the published plies: the usual order, Bg5 first (the transposition the crash harness counted).
    engine, events = opera_window(None, before=True)
    assert sans(engine) == ["Bg5", "c6", "Nc3"]
    lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    assert len(lost) == 1 and lost[0].detail["other_orders"] == [list(PLAYED)] and "order" not in lost[0].detail
    # Published before the snapshot: the published order is taken, and the alert says so.
    engine, events = opera_window((*OPERA_14, *PLAYED), before=True)
    assert sans(engine) == list(PLAYED)
    assert [e.san for e in events if isinstance(e, RecoveredMove)] == list(PLAYED)
    lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    assert len(lost) == 1 and lost[0].detail["plies"] == list(PLAYED) and lost[0].detail["order"] == "published"
    assert lost[0].detail["other_orders"] == [["Bg5", "c6", "Nc3"]]
    assert not [e for e in events if e.type == "move_amended"]
    # Fewer plies published than recovered (the crash came after Nc3 was published): Nc3 first, the rest found.
    engine, _ = opera_window((*OPERA_14, "Nc3"), before=True)
    assert sans(engine) == list(PLAYED)
    # Published plies of another line (not this game's): no evidence, the usual order.
    engine, events = opera_window(("d4", "d5", "c4"), before=True)
    assert sans(engine) == ["Bg5", "c6", "Nc3"]
    assert all("order" not in e.detail for e in events if isinstance(e, Alert))


def test_plies_recovered_before_the_published_order_was_read_are_amended_to_it() -> None:
    engine, events = opera_window((*OPERA_14, *PLAYED), before=False)
    assert sans(engine) == list(PLAYED)
    assert [m.uci() for m in engine.games[0].moves[14:]] == ["b1c3", "c7c6", "c1g5"]
    amended = [e for e in events if e.type == "move_amended"]
    assert [(e.ply, e.san) for e in amended] == [(15, "Nc3"), (16, "c6"), (17, "Bg5")]   # type: ignore[attr-defined]
    lost = [e for e in events if isinstance(e, Alert) and e.code == "changes_lost"]
    assert len(lost) == 2 and lost[0].detail["plies"] == ["Bg5", "c6", "Nc3"] and lost[1].ply == lost[0].ply
    assert lost[1].detail["plies"] == list(PLAYED) and lost[1].detail["order"] == "published"
    assert lost[1].detail["amended"] == {"ply": 15, "replaces": ["Bg5", "c6", "Nc3"], "played": list(PLAYED)}
    assert events.index(lost[1]) > events.index(amended[-1])
    # A consumer that follows the events has the game as played; the engine plays on from the same position.
    game = LiveGame()
    for event in events:
        game.apply(event.to_dict())
    assert [m.uci for m in game.moves] == [m.uci() for m in engine.games[0].moves]
    assert engine.state().fen == engine.games[0].board().fen() and engine.state().in_sync
    # The record round-trips through its line (the journal replays it); bad ones are refused with a clear error.
    record = records.Published(7, (*OPERA_14, *PLAYED))
    assert records.parse_line(records.to_line(record)) == record
    with pytest.raises(records.RecordError, match="list of SAN"):
        records.parse_line('{"t":1,"type":"published","moves":"e4"}')


def test_the_change_that_drops_every_hypothesis_is_read_by_the_engine_itself() -> None:
    """A board that names its pieces, its changes lost meanwhile (drop 20 s, game 56 of the bench: ...Nxd5 Nxd5
    Bxd5 Bxd5 Rxd5 Qe4 Rxd1 Rxd1 Bf6, the pieces landing on d5 and d1 never told). The engine follows the orders
    of the captures on d5 as hypotheses; the queen put on e4 drops every one of them. It goes on blind with the
    board of one of them, which had not taken that change: with no queen on e4 it searched for lines that had
    taken the queen and never published a ply again. The change is read by the engine itself: the plies come
    back."""
    start = chess.Board("r1qr2k1/pp2bppp/2p1bn2/3P4/3Q4/2N1B1PP/PPP2PBK/3R1R2 b - - 0 14")
    recs: list[records.Record] = [records.Snapshot(30, start.occupied, pieces=start.board_fen())]
    for t, kind, square, piece in (
            (1368, "lift", "f6", None), (2710, "lift", "c3", None), (2710, "lift", "d5", None),
            (2740, "place", "d5", "N"), (4044, "lift", "e6", None), (6720, "lift", "d5", None),
            (8058, "lift", "g2", None), (10734, "lift", "d8", None), (10734, "place", "d5", "r"),
            (12072, "lift", "d4", None), (13410, "place", "e4", "Q"), (14748, "lift", "d5", None),
            (17424, "lift", "f1", None), (17424, "lift", "e7", None), (18762, "place", "f6", "b")):
        sq = chess.parse_square(square)
        recs.append(records.Lift(t, sq) if kind == "lift" else records.Place(t, sq, piece=piece))
    engine = Engine(fen=start.fen(), settle_ms=300)
    events = [e for r in recs for e in engine.feed(r)] + engine.finish()
    assert published(events) == ["f6d5", "c3d5", "e6d5", "g2d5", "d8d5", "d4e4", "d5d1", "f1d1", "e7f6"]


def test_the_squares_seen_changing_bound_the_plies_searched() -> None:
    """Nf3 Nc6 Ng1 and Nh3 Nc6 Ng1 leave the same squares; with g1, f3 and b8 seen lifted and f3, c6 and g1 put
    down, only the first is searched."""
    board = chess.Board()
    target = (board.occupied & ~chess.BB_B8) | chess.BB_C6
    both = search(board, target, max_plies=3, min_plies=3)
    assert {tuple(m.uci() for m in e.moves) for e in both.found if not e.in_progress} >= {
        ("g1f3", "b8c6", "f3g1"), ("g1h3", "b8c6", "h3g1")}
    seen = (chess.BB_G1 | chess.BB_F3 | chess.BB_B8, chess.BB_F3 | chess.BB_C6 | chess.BB_G1)
    one = search(board, target, max_plies=3, min_plies=3, seen=seen)
    assert {tuple(m.uci() for m in e.moves) for e in one.found} == {("g1f3", "b8c6", "f3g1")}
    assert one.nodes < both.nodes


def test_a_caller_may_follow_more_positions_than_a_lost_changes_search() -> None:
    """A board shown with many short lines to it: past MAX_EXPLANATIONS positions the search calls it
    ambiguous, unless its caller asks for more (the re-reading, which sifts them by the changes seen)."""
    board = chess.Board()
    target = board.occupied   # every knight or rook move out and back: dozens of positions after two plies
    capped = search(board, target, max_plies=4, min_plies=4, max_explanations=2)
    assert capped.gave_up and capped.ambiguous and not capped.found
    wide = search(board, target, max_plies=4, min_plies=4, max_explanations=10_000)
    assert not wide.gave_up and len({e.board.fen() for e in wide.found}) > 2
