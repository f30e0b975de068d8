"""Real games from ``../shared/data/games`` for the property tests and benchmarks.

Reading the 1,426 games with python-chess takes 10-30 s, and eight test modules want them: the games are read
once per process and kept, and the first process of a run writes them as JSON (start FEN, moves in UCI) under
``.pytest_cache/touchmove-games/``, named by a hash of the PGN files and of the code that reads them, so parallel
workers (pytest-xdist) and the Pico lane load that file instead of reading the PGN again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from functools import cache
from pathlib import Path

import chess
import chess.pgn
import pytest

import touchmove.sim.hands
from touchmove.sim.hands import playable_moves, read_games

ROOT = Path(__file__).resolve().parents[2]
GAMES_DIR = ROOT.parent / "shared" / "data" / "games"
CACHE_DIR = ROOT / ".pytest_cache" / "touchmove-games"

Game = tuple[str, chess.Board, list[chess.Move]]


def read_all_games() -> list[Game]:
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


def games_key() -> str:
    """Return a hash of the PGN files, the code that reads them and python-chess's version."""
    digest = hashlib.sha256(chess.__version__.encode())
    for path in [Path(__file__), Path(touchmove.sim.hands.__file__), *sorted(GAMES_DIR.glob("*.pgn"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def games_to_json(games: list[Game]) -> str:
    """Return the games as JSON text: name, start FEN, Chess960 or not, the moves in UCI."""
    rows = []
    for name, start, moves in games:
        if type(start) is not chess.Board:  # a variant's board would not come back from its FEN as itself
            raise ValueError(f"{name}: a {type(start).__name__}, not a chess.Board")
        rows.append([name, start.fen(), start.chess960, " ".join(m.uci() for m in moves)])
    return json.dumps(rows)


def games_from_json(text: str) -> list[Game]:
    """Return the games :func:`games_to_json` wrote."""
    return [(name, chess.Board(fen, chess960=chess960), [chess.Move.from_uci(u) for u in ucis.split()])
            for name, fen, chess960, ucis in json.loads(text)]


@cache
def load_games() -> list[Game]:
    """Return the games (see :func:`read_all_games`): read once per process, and once per set of PGN files where
    the processes of a run share ``CACHE_DIR`` (the first one reads and writes them while the others wait)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    path = CACHE_DIR / f"games-{games_key()}.json"
    with open(CACHE_DIR / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return games_from_json(path.read_text(encoding="utf-8"))
        games = read_all_games()
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(games_to_json(games), encoding="utf-8")
        partial.replace(path)
        for old in CACHE_DIR.glob("games-*.json"):
            if old != path:
                old.unlink()
        return games


def require_games() -> list[Game]:
    """Return the games, or skip (fail in CI) with a clear message where ``../shared`` is absent."""
    if not GAMES_DIR.is_dir():
        message = f"the shared games are not at {GAMES_DIR} (clone the project beside ../shared to run this)"
        if os.environ.get("TOUCHMOVE_REQUIRE_ALL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # the caller's own list and boards: a caller may sort or cut the list, or play on a start board
    return [(name, start.copy(), list(moves)) for name, start, moves in load_games()]
