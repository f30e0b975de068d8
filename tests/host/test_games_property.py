"""Every real game, played by modelled hands, comes back exactly.

The hands vary the order of captures, en passant and castling, the four promotion manners, slides, bounces,
sensor chatter, hesitation and clock presses; between games the board is cleared and set up again.
"""

from __future__ import annotations

import random
from functools import cache

import chess
import pytest
from games import require_games
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_format import as_snapshots

from touchmove.rules import Engine
from touchmove.sim.hands import Hands, Style, play_session

SESSION = 12  # games per session: one board, cleared and set up between games


@cache
def games() -> list[tuple[str, chess.Board, list[chess.Move]]]:
    return require_games()


def replay_session(chunk: list[tuple[str, chess.Board, list[chess.Move]]], hands: Hands,
                   settle_ms: int = 200, snapshots: bool = False) -> Engine:
    play_session([(board, moves) for _, board, moves in chunk], hands)
    first = chunk[0][1]
    engine = Engine(fen=first.fen(), chess960=first.chess960, settle_ms=settle_ms)
    recording = as_snapshots(hands.records, first.fen()) if snapshots else hands.records
    for record in recording:
        engine.feed(record)
    engine.finish()
    return engine


def assert_given_back(engine: Engine, chunk: list[tuple[str, chess.Board, list[chess.Move]]]) -> None:
    played = [g for g in engine.games if g.moves]
    assert len(played) == len(chunk), [g.moves[:3] for g in played]
    for game, (name, board, moves) in zip(played, chunk, strict=True):
        assert game.start_fen == board.fen(), name
        differ = next((i for i, (a, b) in enumerate(zip(game.moves, moves, strict=False)) if a != b),
                      min(len(game.moves), len(moves)))
        assert game.moves == moves, f"{name}: first difference at ply {differ + 1}"


def test_the_shared_games_are_there() -> None:
    all_games = games()
    assert len(all_games) > 1000
    assert sum(len(moves) for _, _, moves in all_games) > 80_000
    assert any(board.chess960 for _, board, _ in all_games)


@pytest.mark.parametrize("part", range(4))
def test_every_game_comes_back(part: int) -> None:
    """All games, a quarter per test, in sessions of twelve games on one board."""
    all_games = games()
    mine = all_games[part::4]
    for start in range(0, len(mine), SESSION):
        chunk = mine[start:start + SESSION]
        hands = Hands(random.Random(f"{part}-{start}"), Style())
        assert_given_back(replay_session(chunk, hands), chunk)


def test_every_third_game_comes_back_from_a_board_that_sends_only_snapshots() -> None:
    """A board that reports each change as a whole-board snapshot (no lifts and places) loses nothing either."""
    mine = games()[1::3]
    for start in range(0, len(mine), SESSION):
        chunk = mine[start:start + SESSION]
        hands = Hands(random.Random(f"snapshots-{start}"), Style())
        assert_given_back(replay_session(chunk, hands, snapshots=True), chunk)


FASTEST_HANDS = {
    "bullet without clocks": Style(clock=False, release_ms=(30, 150), think_ms=(100, 600)),
    "bullet, sliding and noisy": Style(clock=False, release_ms=(30, 150), think_ms=(100, 600), overlap=0.5,
                                      slide=1.0, bounce=0.5, chatter=0.5),
    "bullet with clocks, adjusting": Style(release_ms=(30, 150), think_ms=(100, 600), overlap=0.5, adjust=0.3,
                                          jadoube=0.2),
    "blitz without clocks, adjusting": Style(clock=False, release_ms=(120, 400), think_ms=(100, 600), overlap=0.5,
                                            adjust=0.3, jadoube=0.2, victim_first=0.0),
    "settle 150, hesitating": Style(clock=False, settle_ms=150, release_ms=(30, 150), think_ms=(50, 300),
                                   overlap=0.3, hesitate=0.5),
}


@pytest.mark.parametrize("name", FASTEST_HANDS)
def test_the_fastest_hands_lose_nothing(name: str) -> None:
    """The opponent answers 30-150 ms after the release, before the settle time is over: every fifth game."""
    style = FASTEST_HANDS[name]
    for index, game in enumerate(games()[list(FASTEST_HANDS).index(name)::5]):
        hands = Hands(random.Random(f"{name}-{index}"), style)
        assert_given_back(replay_session([game], hands, settle_ms=style.settle_ms), [game])


styles = st.builds(
    Style,
    settle_ms=st.sampled_from([150, 200, 250]),
    think_ms=st.sampled_from([(100, 600), (400, 3000), (2000, 20000)]),
    slide=st.floats(0, 1),
    bounce=st.floats(0, 0.5),
    chatter=st.floats(0, 0.5),
    hesitate=st.floats(0, 0.5),
    victim_first=st.floats(0, 1),
    clock=st.booleans(),
    promote_record=st.just(True),
    release_ms=st.sampled_from([None, (120, 400), (300, 2000)]),
    adjust=st.floats(0, 0.5),
    jadoube=st.floats(0, 0.3),
    overlap=st.floats(0, 0.5),
)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), style=styles, seed=st.integers(0, 2**32 - 1))
def test_hands_of_every_kind(data: st.DataObject, style: Style, seed: int) -> None:
    all_games = games()
    chunk = data.draw(st.lists(st.sampled_from(all_games), min_size=1, max_size=3, unique_by=lambda g: g[0]))
    engine = replay_session(chunk, Hands(random.Random(seed), style), settle_ms=style.settle_ms)
    assert_given_back(engine, chunk)
