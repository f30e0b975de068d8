"""The harder hands (``touchmove.sim.hands.HARDER_HANDS``): real games played with each habit come back exactly.

Each kind plays a share of the shared games (the kinds together play every game once), each game alone on a
board with a seed of its own (the seeds ``bench/hand_styles.py`` uses, which measures every kind on every game).
Every kind gives back every game of all 1,426 (measured with the bench), so none may lose a game here, and no
game raises ``illegal_move`` (the hands play only legal moves). Thirty seeded draws mix the new habits with the
old ones: all given back but one, which ends with an alert (``NOT_GIVEN_BACK``).
"""

from __future__ import annotations

import random
from functools import cache

import chess
import pytest
from games import require_games

from touchmove.rules import Engine
from touchmove.rules.events import Alert
from touchmove.sim.hands import HARDER_HANDS, STOOD_ASIDE_COMBINATIONS, Hands, Style, play

Game = tuple[str, chess.Board, list[chess.Move]]

@cache
def games() -> list[Game]:
    return require_games()


def replay(game: Game, style: Style, seed: str) -> tuple[bool, list[str]]:
    """Return whether the game came back exactly, and the codes of the illegal-move alerts raised."""
    _, board, moves = game
    hands = Hands(random.Random(seed), style)
    play(board, moves, hands)
    engine = Engine(fen=board.fen(), chess960=board.chess960, settle_ms=style.settle_ms)
    illegal = [event.code for record in hands.records for event in engine.feed(record)
               if isinstance(event, Alert) and event.code == "illegal_move"]
    engine.finish()
    return len(engine.games) == 1 and engine.games[0].moves == moves, illegal


@pytest.mark.parametrize("name", HARDER_HANDS)
def test_every_kind_of_harder_hands_gives_the_games_back(name: str) -> None:
    sample = games()[list(HARDER_HANDS).index(name)::len(HARDER_HANDS)]
    lost, illegal_in = [], []
    for game in sample:
        exact, illegal = replay(game, HARDER_HANDS[name], f"{name}-{game[0]}")
        if not exact:
            lost.append(game[0])
        if illegal:
            illegal_in.append(game[0])
    assert not lost, f"{len(lost)} of {len(sample)} games lost: {lost}"
    assert not illegal_in, f"illegal_move raised though every move was legal: {illegal_in}"


def test_the_kinds_cover_each_habit_and_the_sample_every_game() -> None:
    habits = ("idle_adjust", "sleeve", "castle_slide", "bullet_recapture", "push_aside", "stand_aside")
    for habit in habits:
        assert any(getattr(style, habit) > 0 for style in HARDER_HANDS.values()), habit
    for how in STOOD_ASIDE_COMBINATIONS:     # issue 35's combinations, with and without clocks
        assert {style.clock for style in HARDER_HANDS.values() if style.stand_aside_after == how} == {True, False}
    assert sum(len(games()[i::len(HARDER_HANDS)]) for i in range(len(HARDER_HANDS))) == len(games())


def harder_style(rng: random.Random) -> Style:
    """Old and new habits mixed, drawn from ``rng``; straightening after the move only on boards with clocks
    (without them the board cannot tell whose hand lifted a piece, and a straightened piece can read as a
    capture's proof)."""
    clock = rng.random() < 0.5
    return Style(
        think_ms=rng.choice([(100, 600), (400, 3000)]),
        slide=rng.uniform(0, 1),
        bounce=rng.uniform(0, 0.3),
        chatter=rng.uniform(0, 0.3),
        victim_first=rng.uniform(0, 1),
        clock=clock,
        overlap=rng.uniform(0, 0.3),
        adjust=rng.uniform(0, 0.3) if clock else 0.0,
        idle_adjust=rng.uniform(0, 0.6),
        sleeve=rng.uniform(0, 0.5),
        castle_slide=rng.uniform(0, 1),
        bullet_recapture=rng.uniform(0, 0.8),
        bullet=rng.uniform(0, 0.2),
        push_aside=rng.uniform(0, 0.8),
    )


#: How many mixes of habits are played, each on a game of its own.
MIXES = 30
#: Mixes the engine does not give back (an open weakness, found when the mixes stopped moving with the code):
#: mix 6, carlsen-chesscom-2014#158 with slides, chatter and sleeve knocks, ends in a board_mismatch after
#: 27. Kf1 (plies 54-69 lost; the same on the code of 2026-12-05). Each must still end with an alert, never wrong
#: in silence; one given back exactly is taken off this list.
NOT_GIVEN_BACK = {6: "carlsen-chesscom-2014#158"}


def replay_with_alerts(game: Game, style: Style, seed: str) -> tuple[bool, list[str]]:
    """Return whether the game came back exactly, and the codes of every alert raised."""
    _, board, moves = game
    hands = Hands(random.Random(seed), style)
    play(board, moves, hands)
    engine = Engine(fen=board.fen(), chess960=board.chess960, settle_ms=style.settle_ms)
    codes = [event.code for record in hands.records for event in engine.feed(record) if isinstance(event, Alert)]
    codes += [event.code for event in engine.finish() if isinstance(event, Alert)]
    return len(engine.games) == 1 and engine.games[0].moves == moves, codes


@pytest.mark.parametrize("mix", range(MIXES))
def test_harder_habits_mixed_with_the_old_ones(mix: int) -> None:
    """Idle adjustments, a sleeve, slid castling, bullet replies and pushed-aside victims, mixed: every game
    exact (but those of :data:`NOT_GIVEN_BACK`, which end with an alert), and no illegal_move. The mixes are
    drawn from a seeded generator, not by Hypothesis: with ``derandomize`` Hypothesis still mixes in constants it
    reads from the project's modules loaded in the process, so its examples moved with code edits and with the
    tests a worker ran before (one example failed in one run out of many and passed in the rest)."""
    rng = random.Random(f"harder habits mixed-{mix}")
    style = harder_style(rng)
    game = rng.choice(games())
    exact, codes = replay_with_alerts(game, style, str(rng.getrandbits(32)))
    assert "illegal_move" not in codes, game[0]
    if mix in NOT_GIVEN_BACK:
        assert game[0] == NOT_GIVEN_BACK[mix]
        assert not exact, f"mix {mix} ({game[0]}) is given back now: take it off NOT_GIVEN_BACK"
        assert "board_mismatch" in codes or "changes_lost" in codes, f"{game[0]} wrong without an alert: {codes}"
    else:
        assert exact, game[0]


@pytest.mark.parametrize("clock", [True, False], ids=["clocks", "no clocks"])
def test_a_piece_stood_aside_before_its_capture_comes_back_without_a_mismatch(clock: bool) -> None:
    """The capturing player stands the piece just moved on a neighbouring square, takes it off and captures on its
    square: every game of a sample (every 7th) comes back exactly, with no board_mismatch and no illegal_move; a
    pawn's single step stood on its double step's square before it settled and captured where it stood first too,
    though an occupancy board shows the same as a double step captured en passant (the same position after)."""
    style = Style(stand_aside=0.8, clock=clock)
    lost, alarmed = [], []
    for game in games()[::7]:
        _, board, moves = game
        hands = Hands(random.Random(f"stood aside-{game[0]}"), style)
        play(board, moves, hands)
        engine = Engine(fen=board.fen(), chess960=board.chess960, settle_ms=style.settle_ms)
        alarms = {event.code for record in hands.records for event in engine.feed(record)
                  if isinstance(event, Alert) and event.code in ("board_mismatch", "illegal_move")}
        engine.finish()
        if not (len(engine.games) == 1 and engine.games[0].moves == moves):
            lost.append(game[0])
        if alarms:
            alarmed.append(game[0])
    assert not lost, f"{len(lost)} games lost: {lost[:5]}"
    assert not alarmed, f"board_mismatch or illegal_move in {alarmed[:5]}"
