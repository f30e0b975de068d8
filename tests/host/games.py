"""Real games from ``../shared/data/games`` for the property tests and benchmarks."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import chess
import chess.pgn
import pytest

from touchmove.sim.hands import playable_moves, read_games

GAMES_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "games"


def load_games() -> list[tuple[str, chess.Board, list[chess.Move]]]:
    """Return (name, start, moves) for every game python-chess reads without errors (null moves left out)."""
    logging.getLogger("chess.pgn").setLevel(logging.CRITICAL)
    out = []
    for path in sorted(GAMES_DIR.glob("*.pgn")):
        for index, game in enumerate(read_games(str(path)), start=1):
            moves = playable_moves(game)
            if moves is None:
                continue
            out.append((f"{path.stem}#{index}", game.board(), moves))
    return out


def require_games() -> list[tuple[str, chess.Board, list[chess.Move]]]:
    """Return the games, or skip (fail in CI) with a clear message where ``../shared`` is absent."""
    if not GAMES_DIR.is_dir():
        message = f"the shared games are not at {GAMES_DIR} (clone the project beside ../shared to run this)"
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return load_games()
